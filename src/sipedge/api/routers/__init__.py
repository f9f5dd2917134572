"""One router per resource; each stays thin: validate, call the repository, commit, render."""
