"""The store contract suite. A package so that its module names (``contract.test_local_store``)
do not collide with same-named test modules elsewhere under ``tests/``."""
