"""The seed lab 2's experiments run with in the course's grading (public/conftest.py): not the
learners' default 0, which their copy of the checks uses, so results must hold for any seed."""
SEED = 5
