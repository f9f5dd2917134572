"""Unit tests: no event loop, no database. (This file puts tests/unit on sys.path, so test
modules below it can import ``fuzz_targets``.)"""
