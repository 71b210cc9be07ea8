"""The README is a short door to docs/: its first screen holds the two commands and the learner's
loop, and every link in it and in docs/ leads somewhere."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_the_first_screen_has_the_two_commands_and_the_loop():
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:45])
    for needed in ("make grade", "make test", "grade.py lab2 --watch"):
        assert needed in first_screen


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_every_link_resolves():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#")[0]).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken


def test_the_readme_opens_every_page_of_docs():
    """Each guide is there, and the README, the door, links every page of docs/."""
    pages = {page.name for page in PAGES[1:]}
    assert {"learners.md", "instructors.md", "authoring.md", "how-it-works.md", "figures.md"} <= pages
    linked = {Path(target.split("#")[0]).name for target in LINK.findall((ROOT / "README.md").read_text())}
    assert pages <= linked, f"docs/ pages the README does not link: {sorted(pages - linked)}"
