"""Where the student copies are published, as the book links to them: the site's student/ folder
(scripts/student.py writes it), Colab, which opens the copies that the Pages workflow pushes to the
branch STUDENT_BRANCH, and Binder (binder/postBuild writes the copies). The tests check every
link of the book against these."""

from __future__ import annotations

from nbtools import project_urls
from student import ARCHIVE, SITE_FOLDER

STUDENT_BRANCH = "student-copies"


def repository_url() -> str:
    """The repository's address, from its one place: pyproject.toml's [project.urls]."""
    return project_urls()["Repository"].rstrip("/")


def colab_url(name: str) -> str:
    """Colab's address for the published student copy of the notebook ``name``."""
    owner_repo = repository_url().removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{STUDENT_BRANCH}/{name}"


def binder_url() -> str:
    """Binder's address for JupyterLab on the student copies (binder/postBuild writes them)."""
    owner_repo = repository_url().removeprefix("https://github.com/")
    return f"https://mybinder.org/v2/gh/{owner_repo}/main?urlpath=lab/tree/{SITE_FOLDER}"


def links_markdown(name: str, prefix: str = "../") -> str:
    """The markdown of the links to a notebook's student copy, as its exercise shows them (plain
    HTML anchors: the copies are files of the site, not pages the book's build knows)."""
    folder = f"{prefix}{SITE_FOLDER}"
    return (f'**Work on it in a student copy** (no solution, the same self-check): '
            f'<a href="{folder}/{name}" download>download this notebook</a>, '
            f'<a href="{colab_url(name)}">open it in Colab</a>, or '
            f'<a href="{folder}/{ARCHIVE}" download>all the student copies (zip)</a>.')
