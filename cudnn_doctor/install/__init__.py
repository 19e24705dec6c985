"""`cudnn-doctor install` and `uninstall`: sources, layout per OS, plan, transactional apply.

One module per job: `layout` (where files go, per platform), `safety` (what an archive may
hold), `archive` (reading and staging every layout NVIDIA ships), `redistrib` and `sources`
(what to fetch), `download`, `plan`, `transaction` (journal, backup, rollback), `manifest`,
`verify` (the check probes on the result), `render` (text and JSON).
"""
