"""Reads the JUnit XML of `kiln eval --junit` with junitparser (what CI test views use) and
checks its counts. Usage: junit_check.py REPORT.xml EXPECTED_TESTS EXPECTED_FAILURES.
Exits 1 on a mismatch (the counts the suites declare, or the testcases they hold), printing
what it read; 0 otherwise."""

import sys

from junitparser import Failure, JUnitXml, TestSuite

path, want_tests, want_failures = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
xml = JUnitXml.fromfile(path)
suites = [xml] if isinstance(xml, TestSuite) else list(xml)
problems = []
cases = failures = 0
for suite in suites:
    in_suite = list(suite)
    failed = [c for c in in_suite if any(isinstance(r, Failure) for r in c.result)]
    for case in failed:
        for result in case.result:
            if isinstance(result, Failure) and not (result.message or "").strip():
                problems.append(f"{suite.name}: {case.name}: a failure without a message")
    if suite.tests != len(in_suite):
        problems.append(f"{suite.name}: tests={suite.tests} but {len(in_suite)} testcases")
    if suite.failures != len(failed):
        problems.append(f"{suite.name}: failures={suite.failures} but {len(failed)} failed")
    for case in in_suite:
        if not case.classname or not case.name:
            problems.append(f"{suite.name}: a testcase without classname or name")
    cases += len(in_suite)
    failures += len(failed)
    print(f"{suite.name}: {len(in_suite)} tests, {len(failed)} failures")
if cases != want_tests:
    problems.append(f"{cases} tests, expected {want_tests}")
if failures != want_failures:
    problems.append(f"{failures} failures, expected {want_failures}")
for p in problems:
    print("MISMATCH:", p)
sys.exit(1 if problems else 0)
