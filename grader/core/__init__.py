"""The core of one grading: the typed request in, pytest over the lab's checks with the grading
plugin, each check's outcome decided as a value, the student's files read from any container, and
what a lab forbids. Front doors (grader.learner, grader.instructor, grader.author) reach the judge
only through here."""
