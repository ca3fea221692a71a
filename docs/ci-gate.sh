#!/usr/bin/env bash
# docs/ci-gate.sh: upload a run, wait for its import, fail below a support threshold.
# EVIDENCE_URL and EVIDENCE_TOKEN (a lead's) come from the CI's secrets; the rest may too.
set -euo pipefail
API="$EVIDENCE_URL/api"
AUTH="Authorization: Bearer $EVIDENCE_TOKEN"
PROJECT=${PROJECT:-demo} BUNDLE=${BUNDLE:-run.jsonl} THRESHOLD=${THRESHOLD:-0.8}
SOURCE=${SOURCE:-annotator:seed-protocol}   # whose verdicts: default, consensus, annotator:NAME

# 1. Upload the run's bundle: 202 and its job. (-f: any 4xx or 5xx fails the job, with
#    curl's exit status 22; a .jsonl.gz goes as application/gzip.)
curl -fsS -H "$AUTH" -H "Content-Type: application/x-ndjson" --data-binary "@$BUNDLE" \
  "$API/projects/$PROJECT/imports" > job.json

# 2. Poll the job until it is over; a failed import says why, line by line.
while jq -e '.state == "queued" or .state == "running"' job.json > /dev/null; do
  sleep 2
  curl -fsS -H "$AUTH" "$EVIDENCE_URL$(jq -r .links.self job.json)" > job.json
done
if jq -e '.state == "failed"' job.json > /dev/null; then
  jq -r '.errors[]' job.json >&2    # line 9: not valid JSON …
  exit 1
fi
RUN=$(jq -r .result.run_id job.json)

# 3. Its figures, from the verdicts of SOURCE (here the bundle's own judge).
curl -fsS -H "$AUTH" "$EVIDENCE_URL$(jq -r .links.metrics job.json)?source=$SOURCE" > metrics.json
jq '.run.micro.support' metrics.json          # {"k": 3, "n": 3, "value": 1, "low": 0.4385, "high": 1}

# 4. Fail below the threshold (an undefined support, null, counts as 0).
jq -e --argjson t "$THRESHOLD" '(.run.micro.support.value // 0) >= $t' metrics.json > /dev/null || {
  echo "support of $RUN: $(jq '.run.micro.support.value' metrics.json) is below $THRESHOLD" >&2
  exit 1
}

# 5. Optional: what changed against the baseline, fact by fact.
BASELINE=$(curl -fsS -H "$AUTH" "$API/projects/$PROJECT/runs" \
  | jq -r --arg r "$RUN" '.runs[] | select(.run_id == $r) | .baseline_run_id // empty')
if [ -n "$BASELINE" ]; then
  curl -fsS -H "$AUTH" "$API/projects/$PROJECT/compare?a=$BASELINE&b=$RUN&source=$SOURCE" \
    | jq '{left_out, changes: [.pairs[] | select(.comparable) | .facts[] | .change]}'
fi

# 6. Optional: an audit package of the run, kept as the job's artifact.
curl -fsS -X POST -H "$AUTH" "$API/projects/$PROJECT/audit-packages?runs=$RUN" > export.json
while jq -e '.state == "queued" or .state == "running"' export.json > /dev/null; do
  sleep 2
  curl -fsS -H "$AUTH" "$EVIDENCE_URL$(jq -r .links.self export.json)" > export.json
done
jq -e '.state == "done"' export.json > /dev/null || { jq -r '.errors[]' export.json >&2; exit 1; }
curl -fsS -H "$AUTH" -o audit.zip "$EVIDENCE_URL$(jq -r .links.package export.json)"
