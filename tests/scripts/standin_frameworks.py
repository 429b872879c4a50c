"""Stand-ins of the frameworks' objects, in plain torch, whose code sits where an installed
library's does (its file name under site-packages): the command sees their frames as it sees
accelerate's or Lightning's. Each keeps the shape that matters to the command, not the
framework's features."""
import os
import sysconfig

_SOURCE = '''
class Accelerator:
    """accelerate's shape: backward(loss) runs loss.backward() inside the library."""

    def prepare(self, *objects):
        return objects

    def backward(self, loss, **kwargs):
        loss.backward(**kwargs)
'''
_FILE = os.path.join(sysconfig.get_paths()["purelib"], "standin_accelerate", "accelerator.py")
_SPACE: dict = {}
exec(compile(_SOURCE, _FILE, "exec"), _SPACE)
Accelerator = _SPACE["Accelerator"]
