"""Writes of the cards app, one module per concern.

- `guards`: what every write checks first (membership, the claim's lock and chain head,
  stale forms);
- `claims`: a claim split out of an answer, rewritten, relinked or withdrawn;
- `verdicts`: a verdict or a lead's adjudication;
- `reviews`: a decomposition marked complete, a reviewer's submit, a lead's unblinding;
- `assignments`: who reviews which case, by hand or dealt;
- `tallies`: the stored figures, which each of them keeps current in its transaction.
"""
