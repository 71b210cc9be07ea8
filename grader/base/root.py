"""Where the course lives: the folder of grade.py, assignments/ and grader/. The ground floor:
it imports nothing of the grader's, and runs on any Python 3 (grader/learner/preflight.py needs it there)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
