"""`cudnn-doctor install` and `uninstall`: sources, layout per OS, plan, transactional apply.

One module per job: `layout` (where files go, per platform), `safety` (what an archive may
hold), `archive` (reading and staging every layout NVIDIA ships), `redistrib` and `sources`
(what to fetch), `download`, `plan`, `transaction` (journal, backup, rollback), `faults` (the
named step boundaries the tests kill the process at), `manifest`, `verify` (the check probes on
the result), `outcome` (what happened, as data for the renderers).
"""
