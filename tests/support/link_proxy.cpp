#include "tests/support/link_proxy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace qf::test_support {

namespace {

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0)
      return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

/// A whole request: headers and the body Content-Length announces.
bool read_request(int fd, std::string& out) {
  char buf[16384];
  for (;;) {
    auto end = out.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t length = 0;
      auto cl = out.find("Content-Length: ");
      if (cl == std::string::npos)
        cl = out.find("content-length: ");
      if (cl != std::string::npos && cl < end)
        length = std::stoul(out.substr(cl + 16));
      if (out.size() >= end + 4 + length)
        return true;
    }
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      return false;
    out.append(buf, static_cast<size_t>(n));
  }
}

/// Everything until the server closes (Connection: close).
std::string read_to_end(int fd) {
  std::string out;
  char buf[16384];
  for (;;) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string with_body(const std::string& response, const std::string& body) {
  auto end = response.find("\r\n\r\n");
  if (end == std::string::npos)
    return response;
  std::string head;
  size_t at = 0;
  auto headers = response.substr(0, end + 2);
  while (at < headers.size()) {
    auto eol = headers.find("\r\n", at);
    auto line = headers.substr(at, eol - at);
    at = eol + 2;
    if (strncasecmp(line.c_str(), "content-length:", 15) == 0)
      continue;
    head += line + "\r\n";
  }
  return head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

} // namespace

link_proxy::link_proxy(uint16_t target_port) : target_(target_port) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || ::listen(listener_, 1024) != 0)
    throw std::runtime_error(std::string{"link_proxy: "} + std::strerror(errno));
  socklen_t len = sizeof addr;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

link_proxy::~link_proxy() {
  stopping_ = true;
  cut();
  ::shutdown(listener_, SHUT_RDWR);
  ::close(listener_);
  acceptor_.join();
  std::unique_lock guard{mtx_};
  all_done_.wait(guard, [this] { return exchanges_ == 0; });
}

void link_proxy::cut() {
  cut_ = true;
  std::lock_guard guard{mtx_};
  for (int fd : open_)
    ::shutdown(fd, SHUT_RDWR); // the exchange's thread closes it
}

void link_proxy::restore() {
  cut_ = false;
}

void link_proxy::tamper_with(std::string prefix, tamper t) {
  std::lock_guard guard{mtx_};
  tamper_prefix_ = std::move(prefix);
  tamper_ = std::move(t);
}

void link_proxy::clear_tamper() {
  std::lock_guard guard{mtx_};
  tamper_.reset();
}

std::vector<std::string> link_proxy::requests() const {
  std::lock_guard guard{mtx_};
  return requests_;
}

void link_proxy::accept_loop() {
  for (;;) {
    int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (stopping_)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10)); // out of descriptors
      continue;
    }
    if (cut_) { // turned away, as a partitioned network would
      ::close(client);
      continue;
    }
    std::lock_guard guard{mtx_};
    open_.insert(client);
    ++exchanges_;
    std::thread([this, client] { serve(client); }).detach();
  }
}

void link_proxy::serve(int client) {
  int upstream = -1;
  auto finish = [&] {
    std::lock_guard guard{mtx_};
    open_.erase(client);
    open_.erase(upstream);
    ::close(client);
    if (upstream >= 0)
      ::close(upstream);
    // Nothing of this object is touched after the count drops.
    if (--exchanges_ == 0)
      all_done_.notify_all();
  };
  std::string request;
  if (!read_request(client, request) || cut_)
    return finish();
  auto line_end = request.find("\r\n");
  auto target = request.substr(0, line_end);
  target = target.substr(0, target.rfind(' ')); // "GET /path"
  auto method = target.substr(0, target.find(' '));
  auto path = target.substr(target.find(' ') + 1);
  std::optional<tamper> edit;
  {
    std::lock_guard guard{mtx_};
    requests_.push_back(target);
    if (tamper_ && path.rfind(tamper_prefix_, 0) == 0)
      edit = tamper_;
  }
  if (edit && edit->target) {
    auto version = request.substr(request.rfind(' ', line_end), line_end - request.rfind(' ', line_end));
    request = method + " " + edit->target(path) + version + request.substr(line_end);
  }
  upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  {
    std::lock_guard guard{mtx_};
    open_.insert(upstream);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(target_.load());
  if (cut_ || ::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || !send_all(upstream, request))
    return finish();
  auto response = read_to_end(upstream);
  if (cut_)
    return finish();
  if (edit && edit->body && response.rfind("HTTP/1.1 200", 0) == 0) {
    auto end = response.find("\r\n\r\n");
    if (end != std::string::npos)
      response = with_body(response, edit->body(response.substr(end + 4)));
  }
  send_all(client, response);
  finish();
}

} // namespace qf::test_support
