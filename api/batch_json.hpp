#pragma once
/// The client-visible JSON of the Files and Batch API objects, exactly as OpenAI shapes them
/// (docs/api.md, "Files and Batch API").

#include <nlohmann/json.hpp>

#include "storage/batch_records.hpp"

namespace sy::api {

/// {"id","object":"file","bytes","created_at","expires_at" (null: never),"filename","purpose",
/// "status":"processed","status_details":null}.
nlohmann::json file_to_json(const storage::file_record& f);

/// {"id","object":"batch","endpoint","errors" (null or {"object":"list","data":[{code,message,
/// param,line}]}),"input_file_id","completion_window","status","output_file_id",
/// "error_file_id","created_at","in_progress_at","expires_at","finalizing_at","completed_at",
/// "failed_at","expired_at","cancelling_at","cancelled_at","request_counts":{total,completed,
/// failed},"usage":{input_tokens,input_tokens_details:{cached_tokens},output_tokens,
/// output_tokens_details:{reasoning_tokens},total_tokens},"metadata"}. Times are Unix seconds,
/// null until reached; empty ids, params and a 0 line are null.
nlohmann::json batch_to_json(const storage::batch_record& b);

}  // namespace sy::api
