#include "actors/http_gateway/openai_response_group.hpp"

#include <nlohmann/json.hpp>

#include "actors/http_gateway/openai_embedding.hpp"
#include "actors/http_gateway/openai_error.hpp"
#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http {

openai_response_group openai_response_group::choices(const openai_response_context& ctx, bool stream) {
  openai_response_group g(ctx.endpoint);
  if (stream) {
    g.stream_.emplace(ctx);
  } else {
    g.whole_.emplace(ctx);
  }
  return g;
}

openai_response_group openai_response_group::inputs(openai_endpoint endpoint, std::string model, size_t n_inputs) {
  openai_response_group g(endpoint);
  g.model_ = std::move(model);
  g.embeddings_.resize(n_inputs);
  return g;
}

openai_response_group openai_response_group::embeddings(std::string model, size_t n_inputs, bool base64) {
  openai_response_group g = inputs(openai_endpoint::embeddings, std::move(model), n_inputs);
  g.base64_ = base64;
  return g;
}

openai_response_group openai_response_group::rerank(std::string model, size_t n_documents, uint32_t top_n) {
  openai_response_group g = inputs(openai_endpoint::rerank, std::move(model), n_documents);
  g.top_n_ = top_n;
  return g;
}

openai_response_group openai_response_group::api(openai_endpoint endpoint, std::unique_ptr<api_encoder> encoder) {
  openai_response_group g(endpoint);
  g.api_ = std::move(encoder);
  return g;
}

void openai_response_group::release_held_back(response_io& io) {
  std::vector<generation_request> reqs = std::move(held_back_);
  held_back_.clear();
  for (generation_request& r : reqs) io.submit(std::move(r));
}

void openai_response_group::write(response_io& io, std::string bytes) {
  if (bytes.empty()) return;
  if (!stream_begun_) {
    stream_begun_ = true;
    io.stream_begin();
  }
  io.stream_write(std::move(bytes));
}

void openai_response_group::respond_error(response_io& io, const status& e) const {
  const openai_error_response r = api_ ? api_->error_response(e) : make_openai_error(e);
  io.respond(r.status, r.body, r.headers());
}

response_end openai_response_group::on_accepted(response_io& io, uint32_t index, const request_accepted& a) {
  if (endpoint_ == openai_endpoint::count_tokens) {  // counted: the request itself is not wanted
    io.respond(200, dump_json(nlohmann::ordered_json{{"input_tokens", a.prompt_tokens}}), {});
    return response_end::cut;
  }
  if (stream_) write(io, stream_->on_accepted(index, a));
  if (api_) write(io, api_->on_accepted(a));
  return response_end::none;
}

response_end openai_response_group::on_chunk(response_io& io, uint32_t index, const request_chunk& c) {
  if (!held_back_.empty()) release_held_back(io);
  if (api_) {
    write(io, api_->on_chunk(c));
  } else if (stream_) {
    write(io, stream_->on_chunk(index, c));
  } else if (whole_) {
    whole_->on_chunk(index, c);
  }
  return response_end::none;
}

response_end openai_response_group::finish_embedding(response_io& io, uint32_t index, const request_finished& f) {
  if (f.reason != finish_reason::stop) {
    respond_error(io, f.reason == finish_reason::error
                          ? f.error
                          : status{errc::internal, std::string("the embedding ended with ") + finish_reason_name(f.reason), 0});
    return response_end::cut;
  }
  if (index >= embeddings_.size()) return response_end::none;
  embeddings_[index] = f.embedding;
  prompt_tokens_ += f.prompt_tokens;
  if (++n_done_ < embeddings_.size()) return response_end::none;
  io.respond(200,
             endpoint_ == openai_endpoint::rerank ? openai_rerank_body(model_, embeddings_, prompt_tokens_, top_n_)
                                                  : openai_embedding_body(model_, embeddings_, prompt_tokens_, base64_),
             {});
  return response_end::complete;
}

response_end openai_response_group::finish_api(response_io& io, const request_finished& f) {
  write(io, api_->on_finished(f));
  if (!api_->done()) return response_end::none;
  if (api_->streaming()) {
    io.stream_end();
  } else if (const status* e = api_->error()) {
    respond_error(io, *e);
  } else {
    io.respond(200, api_->body(), {});
  }
  return f.reason == finish_reason::error ? response_end::cut : response_end::complete;
}

response_end openai_response_group::on_finished(response_io& io, uint32_t index, const request_finished& f) {
  if (!held_back_.empty() && f.reason != finish_reason::error) release_held_back(io);
  if (endpoint_ == openai_endpoint::embeddings || endpoint_ == openai_endpoint::rerank) {
    return finish_embedding(io, index, f);
  }
  if (api_) return finish_api(io, f);
  if (stream_) {
    write(io, stream_->on_finished(index, f));
    if (!stream_->done()) return response_end::none;  // done: all finished, or one failed (its error ended the stream)
    io.stream_end();
    return f.reason == finish_reason::error ? response_end::cut : response_end::complete;
  }
  whole_->on_finished(index, f);
  if (const status* e = whole_->error()) {  // one choice failed: the response is that error
    respond_error(io, *e);
    return response_end::cut;
  }
  if (!whole_->complete()) return response_end::none;
  io.respond(200, whole_->body(), {});
  return response_end::complete;
}

response_end openai_response_group::on_rejected(response_io& io, uint32_t index, const status& e) {
  if (e.code == errc::draining && index > 0 && endpoint_ != openai_endpoint::embeddings &&
      endpoint_ != openai_endpoint::rerank) {
    request_finished f;
    f.reason = finish_reason::shutdown;
    return on_finished(io, index, f);
  }
  if (stream_ && stream_->started()) {
    write(io, stream_->on_error(e));
    io.stream_end();
  } else if (api_ && api_->started()) {
    write(io, api_->on_error(e));
    io.stream_end();
  } else {
    respond_error(io, e);
  }
  return response_end::cut;
}

}  // namespace cortex::http
