"""A program without the `if __name__ == "__main__":` guard that starts a spawned child: the
child, importing the program as its main module, starts one in turn, and multiprocessing's own
error about it is printed there (a traceback without a frame of the command's)."""
import multiprocessing

process = multiprocessing.get_context("spawn").Process(target=print, args=("never",))
process.start()
process.join()
print("exit code", process.exitcode, flush=True)
