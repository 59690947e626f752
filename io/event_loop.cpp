#include "io/event_loop.hpp"

#include "io/round_clock.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <system_error>
#include <utility>

namespace qf::io {

struct watch::entry {
  int fd;
  std::weak_ptr<watcher> to;
  std::atomic<bool> closed{false}; // events taken before the close are dropped
};

namespace {

thread_local event_loop* loop_of_this_thread = nullptr;

/// Runs fn; an exception it lets out is logged and goes no further. One
/// escaping the loop's thread would end the process, and every client of
/// every loop with it, for what went wrong in one session.
template <class Fn>
void contained(const char* what, Fn&& fn) noexcept {
  try {
    fn();
  } catch (const std::exception& e) {
    spdlog::error("event loop: {} failed: {}", what, e.what());
  } catch (...) {
    spdlog::error("event loop: {} failed", what);
  }
}

constexpr uint32_t watched_events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;

} // namespace

// -- watch ---------------------------------------------------------------------

watch::~watch() {
  close();
}

watch::watch(watch&& other) noexcept
  : loop_(std::move(other.loop_)), entry_(std::exchange(other.entry_, nullptr)) {
  // nop
}

watch& watch::operator=(watch&& other) noexcept {
  if (this != &other) {
    close();
    loop_ = std::move(other.loop_);
    entry_ = std::exchange(other.entry_, nullptr);
  }
  return *this;
}

int watch::fd() const {
  return entry_ ? entry_->fd : -1;
}

void watch::close() {
  if (auto* e = std::exchange(entry_, nullptr))
    loop_->release(e);
  loop_.reset();
}

// -- event_loop ----------------------------------------------------------------

std::shared_ptr<event_loop> event_loop::create() {
  int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0)
    throw std::system_error(errno, std::generic_category(), "epoll_create1");
  int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    int err = errno;
    ::close(epoll_fd);
    throw std::system_error(err, std::generic_category(), "eventfd");
  }
  epoll_event ev{};
  ev.events = EPOLLIN; // level-triggered: read once per wake-up
  ev.data.ptr = nullptr;
  if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev) != 0) {
    int err = errno;
    ::close(epoll_fd);
    ::close(wake_fd);
    throw std::system_error(err, std::generic_category(), "epoll_ctl");
  }
  return std::shared_ptr<event_loop>(new event_loop(epoll_fd, wake_fd));
}

event_loop::event_loop(int epoll_fd, int wake_fd) : epoll_fd_(epoll_fd), wake_fd_(wake_fd) {
  // nop
}

event_loop::~event_loop() {
  stop();
  for (auto* e : released_)
    delete e;
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

watch event_loop::add(int fd, std::weak_ptr<watcher> w) {
  auto* e = new watch::entry{fd, std::move(w)};
  epoll_event ev{};
  ev.events = watched_events;
  ev.data.ptr = e;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    ::close(fd);
    delete e;
    return {};
  }
  return watch(shared_from_this(), e);
}

void event_loop::release(watch::entry* e) {
  // Removed and closed at once, from any thread; the entry itself lives
  // until no event already taken from epoll can name it.
  e->closed = true;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, e->fd, nullptr);
  ::close(e->fd);
  if (in_loop_thread()) {
    released_.push_back(e);
    return;
  }
  // Tasks run after the round's events: by then none names the entry.
  post([owned = std::shared_ptr<watch::entry>(e)] {});
}

bool event_loop::in_loop_thread() const {
  return loop_of_this_thread == this;
}

void event_loop::post(task fn) {
  if (in_loop_thread()) {
    local_.push_back(std::move(fn));
    return;
  }
  bool wake = false;
  {
    std::lock_guard guard{mtx_};
    if (stopped_)
      return; // fn is dropped outside the lock, in case it posts again
    posted_.push_back(std::move(fn));
    wake = std::exchange(waiting_, false);
  }
  if (wake) {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  }
}

void event_loop::at_round_end(task fn) {
  round_end_.push_back(std::move(fn));
}

event_loop::timer event_loop::after(std::chrono::milliseconds delay, task fn) {
  timer t{std::chrono::steady_clock::now() + delay, ++timers_armed_};
  timers_.emplace(t, std::move(fn));
  return t;
}

void event_loop::cancel(const timer& t) {
  timers_.erase(t);
}

int event_loop::wait_timeout_ms(bool more_now) const {
  if (more_now)
    return 0;
  if (timers_.empty())
    return -1;
  auto until = timers_.begin()->first.at - std::chrono::steady_clock::now();
  // Rounded up: waking a little early would spin a round that runs nothing.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(until).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
}

void event_loop::run_due_timers() {
  auto now = round_clock::steady();
  std::vector<task> due;
  while (!timers_.empty() && timers_.begin()->first.at <= now) {
    due.push_back(std::move(timers_.begin()->second));
    timers_.erase(timers_.begin());
  }
  for (auto& fn : due) // may add timers, which wait for a later round
    contained("a timer", fn);
}

void event_loop::start() {
  thread_ = std::thread([this] {
    loop_of_this_thread = this;
    run();
    loop_of_this_thread = nullptr;
  });
}

void event_loop::stop() {
  {
    std::lock_guard guard{mtx_};
    if (stopped_ && !thread_.joinable())
      return;
    stopped_ = true;
  }
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable() && !in_loop_thread())
    thread_.join();
  // Dropped outside the lock: a task's captures may post or release.
  for (;;) {
    std::vector<task> dropped;
    {
      std::lock_guard guard{mtx_};
      dropped.swap(posted_);
    }
    dropped.insert(dropped.end(), std::make_move_iterator(local_.begin()),
                   std::make_move_iterator(local_.end()));
    dropped.insert(dropped.end(), std::make_move_iterator(round_end_.begin()),
                   std::make_move_iterator(round_end_.end()));
    local_.clear();
    round_end_.clear();
    if (dropped.empty())
      break;
  }
}

void event_loop::run() {
  while (wait_and_dispatch()) {
    run_round_end();
    run_tasks();
  }
}

bool event_loop::wait_and_dispatch() {
  bool more_now = !local_.empty() || !round_end_.empty();
  {
    std::lock_guard guard{mtx_};
    if (stopped_)
      return false;
    more_now = more_now || !posted_.empty();
    waiting_ = !more_now;
  }
  std::array<epoll_event, 128> events;
  int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                       wait_timeout_ms(more_now));
  round_clock::begin_round();
  {
    std::lock_guard guard{mtx_};
    waiting_ = false;
  }
  for (int i = 0; i < n; ++i) {
    auto* e = static_cast<watch::entry*>(events[i].data.ptr);
    if (!e) {
      uint64_t count;
      [[maybe_unused]] auto r = ::read(wake_fd_, &count, sizeof count);
      continue;
    }
    if (e->closed)
      continue;
    if (auto to = e->to.lock())
      contained("a watcher", [&] { to->on_ready(events[i].events); });
  }
  run_due_timers();
  for (auto* e : released_)
    delete e;
  released_.clear();
  return true;
}

void event_loop::run_round_end() {
  round_end_running_.swap(round_end_);
  for (auto& fn : round_end_running_)
    contained("a round-end hook", fn);
  round_end_running_.clear();
}

void event_loop::run_tasks() {
  running_.swap(local_);
  {
    std::lock_guard guard{mtx_};
    running_.insert(running_.end(), std::make_move_iterator(posted_.begin()),
                    std::make_move_iterator(posted_.end()));
    posted_.clear();
  }
  for (auto& fn : running_)
    contained("a task", fn);
  running_.clear();
}

} // namespace qf::io
