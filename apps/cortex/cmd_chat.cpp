// cortex chat: an interactive multi-turn chat with cortexd over protocol v1.
// Each line read is a user turn; the whole conversation goes out as
// `messages` (cortexd renders it with the model's chat template), the answer
// streams to stdout and joins the conversation as an assistant turn.
//
// Ctrl-C during an answer cancels that request (a `cancel`; the text so far
// stays in the conversation) and returns to the prompt; Ctrl-C or Ctrl-D
// (end of input) at the prompt ends the program (exit 0). With stdin not a
// terminal there is no banner or prompt: lines in, answers out, one answer
// per line of input (each followed by a newline), which is how tests and
// scripts drive it.
#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "apps/cortex/wire_request.hpp"

namespace cortex::cli {

namespace {

enum class line_status { line, end, interrupted, failed };

// Lines from fd 0, read with read(2) so that a SIGINT (catch_sigint: no
// SA_RESTART) interrupts the wait. A SIGINT that lands between the check
// and the read is seen at the next one (the read then waits for input).
class line_reader {
 public:
  line_status next(std::string& out) {
    for (;;) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        out.assign(buf_, 0, nl);
        buf_.erase(0, nl + 1);
        if (!out.empty() && out.back() == '\r') out.pop_back();
        return line_status::line;
      }
      if (eof_) {
        if (buf_.empty()) return line_status::end;
        out = std::move(buf_);
        buf_.clear();
        return line_status::line;
      }
      if (take_sigint()) return line_status::interrupted;
      char chunk[4096];
      const ssize_t n = ::read(0, chunk, sizeof chunk);
      if (n > 0) {
        buf_.append(chunk, static_cast<size_t>(n));
      } else if (n == 0) {
        eof_ = true;
      } else if (errno != EINTR) {
        return line_status::failed;
      }
    }
  }

 private:
  std::string buf_;
  bool eof_ = false;
};

bool is_blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

int cmd_chat(int argc, char** argv) {
  std::vector<option_spec> specs = {
      {"system", "TEXT", "a system turn that starts the conversation", ""},
      {"chat-template-kwargs", "JSON", "extra chat template variables (a JSON object)", ""}};
  for (option_spec& o : generation_specs()) specs.push_back(std::move(o));
  args a("chat",
         "Chats with cortexd: each line you type is a user turn; the whole conversation is sent as chat\n"
         "messages (rendered with the model's chat template) and the answer streams back. Ctrl-C during an\n"
         "answer cancels it; Ctrl-C or Ctrl-D at the prompt quits. With stdin not a terminal: one answer per\n"
         "input line, no prompt.",
         with_endpoint(std::move(specs)));
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  const auto timeout = timeout_ms(a);
  if (!timeout) return 2;
  wire_json request;
  if (!build_generation_request(a, request)) return 2;
  if (!add_chat_template_kwargs(a, request)) return 2;
  wire_json conversation = wire_json::array();
  if (a.has("system")) conversation.push_back({{"role", "system"}, {"content", a.get("system")}});

  const auto curve = curve_keys(a);
  if (!curve) return 2;
  wire_connection c(a.get("endpoint"), *curve);
  if (!c.ok()) { std::fprintf(stderr, "cortex: %s\n", c.error().c_str()); return 1; }
  catch_sigint();
  const bool interactive = isatty(0);
  if (interactive)
    std::fprintf(stderr, "cortex chat with %s: Ctrl-C stops an answer, Ctrl-D or Ctrl-C at the prompt quits.\n",
                 a.get("endpoint").c_str());
  const std::string id_prefix = fresh_request_id() + "-";
  line_reader input;
  for (int turn = 1;; ++turn) {
    if (interactive) {
      std::printf("> ");
      std::fflush(stdout);
    }
    std::string line;
    const line_status got = input.next(line);
    if (got != line_status::line) {
      if (interactive) std::printf("\n");
      if (got == line_status::failed) std::fprintf(stderr, "cortex: cannot read stdin\n");
      return got == line_status::failed ? 1 : 0;
    }
    if (is_blank(line)) continue;
    conversation.push_back({{"role", "user"}, {"content", line}});
    const std::string id = id_prefix + std::to_string(turn);
    request["id"] = id;
    request["messages"] = conversation;
    std::string answer;
    bool cancelled = false;
    c.on_interrupt([&c, &cancelled, id] {
      c.send({{"v", 1}, {"t", "cancel"}, {"id", id}});
      cancelled = true;
    });
    wire_json end;
    const bool ended = c.send(request) && read_request(c, id, static_cast<int>(*timeout), [&answer](const wire_json& ev) {
      const std::string t = ev.value("t", "");
      if (t != "chunk" && t != "finished") return;
      const std::string text = ev.value("text", "");
      answer += text;
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }, end);
    c.on_interrupt(nullptr);
    take_sigint();  // a second Ctrl-C during the answer must not quit at the prompt
    if (!ended) {
      std::fputc('\n', stderr);
      print_no_reply(a, c, *timeout);
      return 1;
    }
    const std::string reason = end.value("reason", "");
    if (end.value("t", "") == "error" || reason == "error") {
      if (!answer.empty()) std::printf("\n");
      if (end.value("t", "") == "error") print_error_reply(end);
      else std::fprintf(stderr, "cortex: the answer ended with an error\n");
      conversation.erase(conversation.end() - 1);  // forget the turn that failed
      continue;
    }
    std::printf("\n");
    std::fflush(stdout);
    if (cancelled) std::fprintf(stderr, "[cancelled]\n");
    conversation.push_back({{"role", "assistant"}, {"content", answer}});
  }
}

}  // namespace cortex::cli
