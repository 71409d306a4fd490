# Conveniences; tasks.py is the real runner (it needs only Python).
.PHONY: demo test setup notebooks docs readme
demo:
	python3 tasks.py demo
test:
	python3 tasks.py test
setup:
	python3 tasks.py setup
notebooks:
	python3 tasks.py notebooks
docs:
	python3 tasks.py docs
readme:
	python3 tasks.py readme
