"""The ground floor every room stands on: the errors a user can fix, the words of the grader's
protocols, text made safe to show, one atomic write, and where the course lies."""
