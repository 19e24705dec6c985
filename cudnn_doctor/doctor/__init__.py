"""The use-cases, on their own floor between the renderers and the commands: what check, fix, explain, image and
install do, as functions on plain options, returning plain results. A command parses, calls one of these, renders.

- diagnosis.py: diagnose(options, env) -> Diagnosis (the report, its findings, its plan): probes -> rules -> plan.
- treatment.py: treat(diagnosis, ...) -> Treatment: preflight, apply, verify, diagnose again, in this process.
- install.py, uninstall.py (+ install_fit.py, install_verify.py): the transactional install and its undo.
- pip_effect.py: whether a pip step did what it was for, asked of the environment it was meant for.
- image.py: an image judged against this node.
- deep_words.py: a framework's own words under --deep, read by explain's reader: the findings they are evidence for.
- verify.py: the plan's environment lines tried in children on the frameworks that fail, before fix prints them.
"""
