// Encoders over the ZeroMQ wire: a real gateway (zmq_server on a loopback
// port) in front of the runtime with tiny-bert / tiny-bert-rerank
// (tests/data/encoder), driven by a libzmq DEALER speaking msgpack.
// `embed` gives llama-server's embeddings within 1e-4 (by token ids and by
// text), `rerank` llama-server's /v1/rerank scores; each request gets one
// `accepted` and exactly one terminal message; a generation submit, an
// embed on a reranker, a rerank on an embedder and bad fields end with a
// terminal 400 that says what to fix. Threaded: every wait has a timeout.
#include <gtest/gtest.h>
#include <zmq.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/gateway/gateway_actor.hpp"
#include "messages/wire/server_decode.hpp"
#include "tests/messages/wire_test_value.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using wire::test::envelope;
using wire::test::mp;

constexpr double k_atol = 1e-4;
const std::string k_dir = std::string(CORTEX_SOURCE_DIR) + "/tests/data/encoder/";

class dealer {
 public:
  explicit dealer(const std::string& endpoint) {
    ctx_ = zmq_ctx_new();
    sock_ = zmq_socket(ctx_, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof linger);
    EXPECT_EQ(zmq_connect(sock_, endpoint.c_str()), 0);
  }
  ~dealer() {
    zmq_close(sock_);
    zmq_ctx_term(ctx_);
  }
  void send(const mp& m) {
    const std::vector<uint8_t> b = m.bytes();
    EXPECT_EQ(zmq_send(sock_, b.data(), b.size(), 0), static_cast<int>(b.size()));
  }
  // The next message within `ms`; nullptr when none came.
  std::unique_ptr<wire::server_message> recv(int ms) {
    zmq_pollitem_t item{sock_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, ms) <= 0) return nullptr;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, sock_, 0) < 0) return nullptr;
    auto m = std::make_unique<wire::server_message>(wire::decode_server_message(
        static_cast<const uint8_t*>(zmq_msg_data(&msg)), zmq_msg_size(&msg)));
    zmq_msg_close(&msg);
    EXPECT_TRUE(m->ok()) << m->error();
    return m;
  }

 private:
  void* ctx_ = nullptr;
  void* sock_ = nullptr;
};

// What one request id received, in order.
struct wire_record {
  std::vector<std::string> types;  // accepted, finished, error...
  std::unique_ptr<wire::server_message> terminal;
};

// The runtime on `model`, a gateway in front of it, one client.
class wire_encoder_fixture {
 public:
  explicit wire_encoder_fixture(const std::string& model) {
    auto cfg = testing::test_runtime_config(k_dir + model);
    cfg.scheduler.max_batch_tokens = 512;
    fx_ = std::make_unique<testing::runtime_fixture>(cfg);
    if (!fx_->ok()) return;
    zmq_server_options o;
    o.endpoint = "tcp://127.0.0.1:*";
    o.linger_ms = 0;
    auto s = zmq_server::bind(o);
    if (!s) return;
    server_ = std::move(*s);
    gw_ = spawn_gateway(fx_->sys(), *server_, gateway_config{});
    const auto& m = fx_->rt().loaded_model();
    model_info info{m.name(), m.hparams().arch, static_cast<uint32_t>(fx_->rt().n_ctx()),
                    static_cast<uint32_t>(m.hparams().n_vocab), m.quant_name(), m.n_params()};
    caf::anon_send(gw_, ready_atom_v, fx_->rt().intake(), info);
    client_ = std::make_unique<dealer>(server_->endpoint());
  }
  ~wire_encoder_fixture() {
    client_.reset();
    if (gw_) caf::anon_send_exit(gw_, caf::exit_reason::user_shutdown);
    fx_.reset();  // awaits the gateway actor before the server it posts to goes
    if (server_) server_->stop();
  }
  bool ok() const { return client_ != nullptr; }
  dealer& client() { return *client_; }

  // Reads until every id in `ids` has had its terminal message, then a
  // little longer to see that nothing follows one. False on timeout.
  bool collect(const std::vector<std::string>& ids, std::map<std::string, wire_record>& out) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120 * testing::k_wait_scale);
    auto all_done = [&] {
      return std::all_of(ids.begin(), ids.end(), [&](const std::string& id) { return out[id].terminal != nullptr; });
    };
    while (!all_done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      take(client_->recv(1000), out);
    }
    while (auto m = client_->recv(300)) take(std::move(m), out);
    return true;
  }

 private:
  static void take(std::unique_ptr<wire::server_message> m, std::map<std::string, wire_record>& out) {
    if (!m) return;
    wire_record& r = out[m->id()];
    r.types.push_back(m->type());
    const bool terminal = m->type() == "finished" || (m->type() == "error" && m->get("terminal") &&
                                                      m->get("terminal")->as<bool>());
    if (terminal) r.terminal = std::move(m);
  }

  std::unique_ptr<zmq_server> server_;
  std::unique_ptr<testing::runtime_fixture> fx_;
  zmq_gateway_actor gw_;
  std::unique_ptr<dealer> client_;
};

std::vector<mp> ids_of(const std::vector<int32_t>& ids) {
  std::vector<mp> out;
  for (int32_t id : ids) out.emplace_back(id);
  return out;
}

void expect_error(const wire_record& r, const std::string& id, uint64_t code, const std::string& says) {
  EXPECT_EQ(r.types, (std::vector<std::string>{"error"})) << id << ": a refused request gets only its error";
  ASSERT_TRUE(r.terminal) << id;
  EXPECT_EQ(r.terminal->get_uint("code"), code) << id << ": " << r.terminal->get_string("message");
  EXPECT_NE(r.terminal->get_string("message").find(says), std::string::npos)
      << id << ": " << r.terminal->get_string("message");
}

TEST(gateway_encoder, embed_matches_llama_server_and_refuses_what_an_embedder_cannot_do) {
  const auto golden = testing::load_json(k_dir + "tiny-bert-f32.json");
  ASSERT_FALSE(golden.is_discarded());
  wire_encoder_fixture fx("tiny-bert-f32.gguf");
  ASSERT_TRUE(fx.ok());
  const auto& inputs = golden["inputs"];
  std::vector<std::string> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ids.push_back("ids" + std::to_string(i));
    fx.client().send(envelope("embed", {{"id", ids.back()}, {"tokens", mp::arr(ids_of(inputs[i]["ids"].get<std::vector<int32_t>>()))}}));
    if (inputs[i].contains("text")) {
      ids.push_back("text" + std::to_string(i));
      fx.client().send(envelope("embed", {{"id", ids.back()}, {"prompt", inputs[i]["text"].get<std::string>()}}));
    }
  }
  fx.client().send(envelope("submit", {{"id", "gen"}, {"prompt", "Hello"}}));
  fx.client().send(envelope("rerank", {{"id", "rerank"}, {"query", "q"}, {"document", "d"}}));
  fx.client().send(envelope("embed", {{"id", "both"}, {"prompt", "x"}, {"tokens", mp::arr({101})}}));
  fx.client().send(envelope("embed", {{"id", "vocab"}, {"tokens", mp::arr({101, 1 << 20})}}));
  fx.client().send(envelope("embed", {{"id", "long"}, {"tokens", mp::arr(std::vector<mp>(513, mp(1000)))}}));
  std::map<std::string, wire_record> got;
  ASSERT_TRUE(fx.collect(ids, got));
  ASSERT_TRUE(fx.collect({"gen", "rerank", "both", "vocab", "long"}, got));

  const auto& want = golden["embeddings"]["mean"];  // the file's pooling
  for (const std::string& id : ids) {
    const size_t i = std::stoul(id.substr(id[0] == 'i' ? 3 : 4));
    const wire_record& r = got[id];
    EXPECT_EQ(r.types, (std::vector<std::string>{"accepted", "finished"})) << id;
    ASSERT_TRUE(r.terminal) << id;
    EXPECT_EQ(r.terminal->get_string("reason"), "stop") << id;
    EXPECT_FALSE(r.terminal->has("stop")) << id;
    EXPECT_EQ(wire::object_uint(*r.terminal->get("usage"), "prompt_tokens"), inputs[i]["ids"].size()) << id;
    ASSERT_TRUE(r.terminal->has("embedding")) << id;
    const auto emb = r.terminal->get("embedding")->as<std::vector<float>>();
    const auto ref = want[i].get<std::vector<double>>();
    ASSERT_EQ(emb.size(), ref.size()) << id;
    double worst = 0;
    for (size_t k = 0; k < ref.size(); ++k) worst = std::max(worst, std::abs(emb[k] - ref[k]));
    EXPECT_LE(worst, k_atol) << id << " (" << ref.size() << " components)";
  }
  expect_error(got["gen"], "gen", 400, "only embeds");
  expect_error(got["rerank"], "rerank", 400, "not a reranker");
  expect_error(got["both"], "both", 400, "not both");
  expect_error(got["vocab"], "vocab", 400, "tokens[1]");
  expect_error(got["long"], "long", 422, "513 tokens");
}

TEST(gateway_encoder, rerank_matches_llama_server_and_embed_is_refused_by_a_reranker) {
  const auto golden = testing::load_json(k_dir + "tiny-bert-rerank-f32.json");
  ASSERT_FALSE(golden.is_discarded());
  wire_encoder_fixture fx("tiny-bert-rerank-f32.gguf");
  ASSERT_TRUE(fx.ok());
  std::vector<std::string> ids;
  for (size_t d = 0; d < golden["documents"].size(); ++d) {
    ids.push_back("doc" + std::to_string(d));
    fx.client().send(envelope("rerank", {{"id", ids.back()},
                                         {"query", golden["query"].get<std::string>()},
                                         {"document", golden["documents"][d].get<std::string>()}}));
  }
  fx.client().send(envelope("embed", {{"id", "plain"}, {"prompt", "an embedding, please"}}));
  fx.client().send(envelope("rerank", {{"id", "nodoc"}, {"query", "q"}}));
  std::map<std::string, wire_record> got;
  ASSERT_TRUE(fx.collect(ids, got));
  ASSERT_TRUE(fx.collect({"plain", "nodoc"}, got));
  std::vector<std::pair<double, size_t>> ranked;
  for (const auto& res : golden["results_all"]) {
    const size_t d = res["index"].get<size_t>();
    const wire_record& r = got["doc" + std::to_string(d)];
    EXPECT_EQ(r.types, (std::vector<std::string>{"accepted", "finished"})) << d;
    ASSERT_TRUE(r.terminal && r.terminal->has("score")) << d;
    EXPECT_FALSE(r.terminal->has("embedding"));
    const double score = r.terminal->get_double("score");
    EXPECT_NEAR(score, res["relevance_score"].get<double>(), k_atol) << "document " << d;
    ranked.emplace_back(-score, d);
  }
  // Sorted by our scores, the documents come in llama-server's order.
  std::sort(ranked.begin(), ranked.end());
  for (size_t k = 0; k < ranked.size(); ++k)
    EXPECT_EQ(ranked[k].second, golden["results_all"][k]["index"].get<size_t>()) << "rank " << k;
  expect_error(got["plain"], "plain", 400, "reranker");
  expect_error(got["nodoc"], "nodoc", 400, "rerank needs document");
}

}  // namespace
}  // namespace cortex
