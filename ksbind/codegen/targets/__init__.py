"""What every binding target shares at generation time: the target record (record.py) and the
crossing rules, entry points and argument checks its values build on (common.py).

The targets themselves are packages of their own, ksbind's under ``ksbind/targets/`` and
others' in other distributions; ``ksbind/targets/registry.py`` lists and finds them.
"""
