"""Sphinx matches ``nitpick_ignore`` entries as ``(type, target)`` tuples, but ``_config.yml``
(YAML) can only give lists, which never match: turn them into tuples when the configuration
is read."""


def _as_tuples(app, config) -> None:
    config.nitpick_ignore = [tuple(entry) for entry in config.nitpick_ignore]


def setup(app):
    app.connect("config-inited", _as_tuples)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
