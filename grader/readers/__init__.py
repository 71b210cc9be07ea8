"""One reader per kind of input, used by every command: a lab's manifest, a notebook, the CSV
files an instructor gives, the names in them and the dates and times they hold."""
