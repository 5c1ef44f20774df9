#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the rules' unit tests (alerts/tests/mooncake-kv.rules.test.yml) against
the rules for vmalert (alerts/mooncake-kv.vm.rules.yml, generated): their
series are classic histograms, all VictoriaMetrics keeps, so every expected
sample and alert holds for the rules without their native branches too.  The
test file is copied with its rule_files pointed at the VM file; nothing else
changes.

usage: check_vm_rules_unit.py PROMTOOL TEST_FILE VM_RULES"""
import os
import re
import subprocess
import sys
import tempfile


def main():
    promtool, test_file, vm_rules = sys.argv[1:4]
    text = open(test_file).read()
    text, n = re.subn(r"(?m)^rule_files:\n(?:  - .*\n)+", "rule_files:\n  - %s\n" % os.path.abspath(vm_rules), text)
    if n != 1:
        sys.exit("%s: no rule_files list to point at %s" % (test_file, vm_rules))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "vm.rules.test.yml")
        with open(path, "w") as f:
            f.write(text)
        sys.exit(subprocess.run([promtool, "test", "rules", path]).returncode)


if __name__ == "__main__":
    main()
