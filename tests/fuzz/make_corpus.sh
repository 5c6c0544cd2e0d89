#!/usr/bin/env bash
# Writes the committed seed corpora, tests/fuzz/corpus/<harness>/: a few valid and near-valid
# inputs per harness, in each harness's input layout (see the comment at the top of its .cpp).
# Run it again after changing a seed here; it rewrites the folders it owns.
set -euo pipefail
cd "$(dirname "$0")"

# seed HARNESS NAME: stdin becomes corpus/HARNESS/NAME.
seed() { cat >"corpus/$1/$2"; }

# An object nested N arrays deep around a valid submission's body.
nested() {
  local n=$1 open close
  open=$(printf '[%.0s' $(seq "$n"))
  close=$(printf ']%.0s' $(seq "$n"))
  printf '{"endpoint":"/v1/chat/completions","body":{"model":"m","messages":%s%s}}' \
    "$open" "$close"
}

rm -rf corpus
mkdir -p corpus/{fuzz_submission,fuzz_http_request,fuzz_batch_line,fuzz_multipart}
mkdir -p corpus/fuzz_intake_message corpus/fuzz_micro_request corpus/fuzz_worker_call
mkdir -p corpus/fuzz_task_line

# --- fuzz_submission: the body of POST /v1/jobs.
s=fuzz_submission
chat='{"endpoint":"/v1/chat/completions","body":{"model":"llama3","messages":[{"role":"user","content":"Hello"}]}}'
printf '%s' "$chat" | seed $s chat
printf '%s' '{"endpoint":"/v1/embeddings","body":{"model":"e5","input":["a","b"]},"metadata":{"team":"x","k":"\u00e9\ud83d\ude00"}}' | seed $s embeddings_metadata
printf '%s' '{"endpoint":"/v1/completions","body":{"model":"m","prompt":"p","stream":false},"max_attempts":3,"webhook_url":"https://hooks.example.com/a?b=c","timeout":30.5}' | seed $s completions_all_fields
printf '%s' '{"endpoint":"/v1/chat/completions","body":{"model":"m","stream":true}}' | seed $s stream_true
printf '%s' '{"endpoint":"/v1/other","body":{"model":"m"}}' | seed $s bad_endpoint
printf '%s' '{"endpoint":"/v1/chat/completions","body":{"model":""},"extra":1}' | seed $s unknown_field
printf '%s' '{"endpoint":"/v1/chat/completions","body":[]}' | seed $s body_not_object
printf '%s' '{"endpoint":"/v1/chat/completions","body":{"model":"m"},"max_attempts":18446744073709551615}' | seed $s max_attempts_huge
printf '%s' '{"endpoint":"/v1/chat/completions","body":{"model":"m"},"max_attempts":-1.5,"timeout":604801}' | seed $s out_of_range
printf '%s' '{"endpoint":"/v1/chat/completions","body":{"model":"m"},"webhook_url":"http:///x y","timeout":1e-300}' | seed $s webhook_no_host
printf '%s' '{"endpoint":"/v1/chat/completions","body":{"model":"m"},"metadata":{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","i":"9","j":"10","k":"11","l":"12","m":"13","n":"14","o":"15","p":"16","q":"17"}}' | seed $s metadata_17_keys
printf '%s' '{"endpoint":"/v1/chat/completions","body":{"model":"m","n":-0,"x":1.7976931348623157e308,"s":"\u0000"},"metadata":{"":1}}' | seed $s edge_values
printf '{"endpoint":"/v1/chat/completions","body":{"model":"m\xff\xfe"}}' | seed $s invalid_utf8
printf '%s' '{"endpoint":"/v1/chat/completions","body":{"model":"m"' | seed $s truncated
printf '%s' '[1,2,{"a":null,"b":true,"c":false}]' | seed $s not_an_object
printf '%s' '{"endpoint":"/v1/chat/completions","endpoint":"/v1/embeddings","body":{"model":"a","model":"b"}}' | seed $s duplicate_keys
nested 100 | seed $s nested_100
# The one deep sample (over any depth limit the engine sets, shallow enough not to crash it):
# libFuzzer's mutations can make it deeper.
nested 2000 | seed $s nested_2000

# --- fuzz_http_request: byte 0 is the read size (0: all at once), then the request.
h=fuzz_http_request
body='{"endpoint":"/v1/chat/completions","body":{"model":"m","messages":[]}}'
{ printf '\x00'; printf 'POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer sk-fuzz\r\nIdempotency-Key: key-1\r\nPrefer: wait=30\r\nContent-Length: %d\r\n\r\n%s' "${#body}" "$body"; } | seed $h submit_job
{ printf '\x07'; printf 'POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: Application/JSON; charset=utf-8\r\nTransfer-Encoding: chunked\r\nPrefer: respond-async, wait="5"; x=y\r\n\r\n%x\r\n%s\r\n0\r\n\r\n' "${#body}" "$body"; } | seed $h submit_chunked
{ printf '\x00'; printf 'GET /v1/jobs?status=queued&limit=5&after=job_01J&x=%%41+b HTTP/1.1\r\nHost: x\r\n\r\n'; } | seed $h list_jobs
{ printf '\x00'; printf 'GET /v1/jobs?status=%%zz&limit=0 HTTP/1.1\r\nHost: x\r\n\r\n'; } | seed $h bad_query
{ printf '\x01'; printf 'GET /v1/jobs/job_01J/events HTTP/1.0\r\n\r\n'; } | seed $h job_events_http10
{ printf '\x00'; printf 'POST /v1/jobs/job_1/cancel HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n'; } | seed $h cancel
{ printf '\x00'; printf 'DELETE /v1/files/file-1 HTTP/1.1\r\nHost: x\r\n\r\n'; } | seed $h delete_file
{ printf '\x00'; printf 'PUT /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}'; } | seed $h method_not_allowed
{ printf '\x00'; printf 'POST /v1/files HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary="b b"\r\nContent-Length: 4\r\n\r\n--b '; } | seed $h upload
{ printf '\x00'; printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{"model":"m","x'; } | seed $h sync_call
{ printf '\x00'; printf 'POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n'; } | seed $h content_length_over_limit
{ printf '\x00'; printf 'POST /v1/jobs HTTP/1.1\r\nHost: x\r\nIdempotency-Key: \x01\r\nAuthorization: Basic abc\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}'; } | seed $h bad_headers
{ printf '\x00'; printf 'GET /healthz?a HTTP/1.1\r\nHost: x\r\nPrefer: wait=99999999999999999999\r\nPrefer: wait=1\r\n\r\n'; } | seed $h prefer_overflow

# --- fuzz_batch_line: byte 0 picks the endpoint (0 chat, 1 embeddings, 2 completions, 3 other).
b=fuzz_batch_line
chat_line='{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}}'
{ printf '\x00'; printf '%s\n' "$chat_line"; } | seed $b chat
{ printf '\x00'; printf '%s\r\n\r\n%s\n' "$chat_line" '{"custom_id":"r2","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"developer","content":[{"type":"text","text":"x"}]}]}}'; } | seed $b two_lines_crlf
{ printf '\x01'; printf '%s' '{"custom_id":"e1","method":"POST","url":"/v1/embeddings","body":{"model":"e5","input":"text"}}'; } | seed $b embeddings
{ printf '\x02'; printf '%s' '{"custom_id":"c1","method":"POST","url":"/v1/completions","body":{"model":"m","prompt":["a"],"stream":false}}'; } | seed $b completions
{ printf '\x03'; printf '%s' '{"custom_id":"o1","method":"POST","url":"/v1/responses","body":{"model":"m"}}'; } | seed $b other_endpoint
{ printf '\x00'; printf '%s' '{"custom_id":"","method":"GET","url":"/v1/embeddings","body":{"model":"m","messages":{},"stream":true}}'; } | seed $b many_problems
{ printf '\x00'; printf '%s' '{"custom_id":"s","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[],"stream":true}}'; } | seed $b stream_true
{ printf '\x00'; printf '%s' '{"custom_id":"d","custom_id":"e","method":"POST","url":"/v1/chat/completions","body":{"model":"a","model":"b","messages":[]}}'; } | seed $b duplicate_keys
{ printf '\x00'; printf '%s' '{"custom_id":"n","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[],"x":[1.5e10,-0,null,true,"\u00e9"]}} trailing'; } | seed $b trailing_content
{ printf '\x01'; printf '%s' '["not","an","object"]'; } | seed $b not_an_object
{ printf '\x00'; printf '{"custom_id":"deep","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[%s%s]}}' "$(printf '[%.0s' $(seq 200))" "$(printf ']%.0s' $(seq 200))"; } | seed $b nested_200
{ printf '\x00'; printf '{"custom_id":"u","method":"POST","url":"/v1/chat/completions","body":{"model":"\xc3\x28","messages":[]}}'; } | seed $b invalid_utf8

# --- fuzz_multipart: byte 0 flags (bit 0: boundary from the Content-Type line that follows;
# bit 1: through an upload), byte 1 the read size, then the body.
m=fuzz_multipart
form='--sy-fuzz-boundary\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--sy-fuzz-boundary\r\nContent-Disposition: form-data; name="file"; filename="requests.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n{"custom_id":"1"}\n\r\n--sy-fuzz-boundary--\r\n'
{ printf '\x00\x00'; printf -- "$form"; } | seed $m parser_form
{ printf '\x00\x05'; printf -- "$form"; } | seed $m parser_form_reads_5
{ printf '\x02\x00'; printf -- "$form"; } | seed $m upload_batch
{ printf '\x02\x03'; printf 'preamble\r\n--sy-fuzz-boundary \t\r\nContent-Disposition: form-data; name="expires_after[anchor]"\r\n\r\ncreated_at\r\n--sy-fuzz-boundary\r\ncontent-disposition: form-data; name=expires_after[seconds]\r\n\r\n3600\r\n--sy-fuzz-boundary\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n--sy-fuzz-boundary\r\nContent-Disposition: form-data; name="file"; filename="a \\"b\\".txt"\r\n\r\nx\r\n--sy-fuzz-boundary--\r\nepilogue'; } | seed $m upload_expiry
{ printf '\x03\x00'; printf 'multipart/form-data; charset=utf-8; boundary="a b:c"\n--a b:c\r\nContent-Disposition: form-data; name="f"\r\n\r\n\r\n--a b:c--'; } | seed $m header_boundary_quoted
{ printf '\x01\x02'; printf 'Multipart/Form-Data;boundary=xyz\n--xyz\r\nContent-Disposition: attachment; name="f"\r\n\r\nv\r\n--xyz--'; } | seed $m header_boundary_not_form_data
{ printf '\x00\x00'; printf -- '--sy-fuzz-boundary\r\n\r\nno headers\r\n--sy-fuzz-boundary--'; } | seed $m part_without_headers
{ printf '\x02\x00'; printf -- '--sy-fuzz-boundary\r\nContent-Disposition: form-data; name="file"\r\n\r\nno filename\r\n--sy-fuzz-boundary\r\nContent-Disposition: form-data; name="file"; filename="b.jsonl"\r\n\r\n\r\n--sy-fuzz-boundary'; } | seed $m upload_unterminated
{ printf '\x00\x01'; printf -- '--sy-fuzz-boundary\r\nX-Nothing\r\n\r\n--sy-fuzz-boundaryx'; } | seed $m bad_header_line

# --- fuzz_intake_message: subject, Authorization, Nats-Msg-Id, reply subject ('+' = present),
# then the payload.
i=fuzz_intake_message
printf 'sy.submit.job\n+Bearer sk-fuzz\n+msg-1\n_INBOX.abc.1\n%s' "$chat" | seed $i keyed
printf 'sy.submit.job\n-\n-\n-\n%s' "$chat" | seed $i no_headers
printf 'sy.submit.job\n+bearer \t sk-fuzz \n+\n_INBOX.*\n%s' "$chat" | seed $i empty_msg_id
printf 'sy.submit.other\n+Bearer sk-other\n+m\nreply..x\n%s' "$chat" | seed $i wrong_subject
printf 'sy.submit.job\n+Basic sk-fuzz\n+\x7f\n>\n{"endpoint":' | seed $i bad_everything
printf 'sy.submit.job\n+Bearer sk-fuzz\n+k\na.b.c\n%s' '{"endpoint":"/v1/embeddings","body":{"model":"e","input":"x"},"metadata":{"a":"b"},"timeout":1}' | seed $i embeddings

# --- fuzz_micro_request: Authorization, Idempotency-Key, traceparent ('+' = present), then the
# payload.
r=fuzz_micro_request
printf '+Bearer sk-fuzz\n+key-1\n+00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n%s' "$chat" | seed $r keyed
printf -- '-\n-\n-\n%s' "$chat" | seed $r no_headers
printf '+Bearer sk-fuzz\n+\x01\n-\n%s' "$chat" | seed $r bad_key
printf '+Bearer sk-fuzz\n-\n-\n{"endpoint":"/v1/chat/completions","body":{"model":"m\\u0000","model":"n"}}' | seed $r nul_and_duplicate
printf '+Bearer sk-fuzz\n-\n-\n{"endpoint":"/v1/chat/completions","body":{"model":"m","t":1e999999,"z":-0}}' | seed $r overflow

# --- fuzz_worker_call: byte 0 the call (0 lease, 1 heartbeat, 2 complete, 3 fail,
# 4 credentials), then the Authorization and capability token lines, then the body.
w=fuzz_worker_call
{ printf '\x00'; printf 'Bearer sk-worker\n\n{"runtime":"r","max_tasks":10,"wait_ms":1000}'; } | seed $w lease
{ printf '\x00'; printf '\n\n{"runtime":"r\\u001b","runtime":"s"}'; } | seed $w lease_control_duplicate
{ printf '\x01'; printf '\na.b.c\n'; } | seed $w heartbeat_empty
{ printf '\x02'; printf '\na.b.c\n{"output":{"text":"done","n":[1,2,-0]}}'; } | seed $w complete
{ printf '\x03'; printf '\na.b.c\n{"error":{"code":"E.1","message":"m"},"retryable":true}'; } | seed $w fail
{ printf '\x04'; printf '\na.b.c\n{}'; } | seed $w credentials

# --- fuzz_task_line: a staged task file (JSONL).
t=fuzz_task_line
printf '%s\n%s\n\n%s\n' '{"custom_id":"a","body":{"model":"m","messages":[]}}' '{"custom_id":"h","request":{"method":"GET","url":"https://example.com/"}}' '{"input":{"x":1}}' | seed $t mixed
printf '%s\n' '{"custom_id":"a\u0000","body":{"model":"m"}}' '{"body":{"model":"m","model":"n"}}' '{"body":{"model":"m","t":1e999999}}' | seed $t hostile
printf '{"custom_id":"deep","body":{"model":"m","x":%s%s}}\n' "$(printf '[%.0s' $(seq 200))" "$(printf ']%.0s' $(seq 200))" | seed $t nested_200
