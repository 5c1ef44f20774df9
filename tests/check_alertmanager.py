# SPDX-License-Identifier: Apache-2.0
"""The example Alertmanager configuration: amtool accepts it, and every alert
name its inhibit rules match exists in the rules (a renamed alert would
silently stop being inhibited).

usage: check_alertmanager.py AMTOOL CONFIG RULES"""
import re
import subprocess
import sys

amtool, config, rules = sys.argv[1:4]
r = subprocess.run([amtool, "check-config", config], capture_output=True, text=True, timeout=30)
assert r.returncode == 0, r.stdout + r.stderr
alerts = set(re.findall(r"- alert: (\S+)", open(rules).read()))
named = set()
for pattern in re.findall(r'alertname=~?"([^"]+)"', open(config).read()):
    named |= set(pattern.split("|"))
missing = sorted(named - alerts)
assert not missing, "inhibit rules name alerts the rules do not have: %s" % missing
print("amtool accepts %s; its %d alert names exist" % (config, len(named)))
