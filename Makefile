# Conveniences; tasks.py is the real runner (it needs only Python).
.PHONY: demo test setup
demo:
	python3 tasks.py demo
test:
	python3 tasks.py test
setup:
	python3 tasks.py setup
