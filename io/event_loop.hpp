// The wire thread's event loop: one epoll set, edge-triggered, and a task
// queue; what pgbouncer's single loop is, without Asio's reactor.
//
// Why not Asio: a read there is tried at once when it starts, and a
// client that was just answered has not written yet, so every statement
// paid a recv that failed with EAGAIN, on the client's socket and on the
// server's; the alternative (waiting for readiness) re-arms the descriptor
// with epoll_ctl instead. Here a descriptor is registered once for input
// and output; its owner remembers what epoll said and reads only when
// there is something to read (docs/performance.md, session 7).
//
// Each round: wait for events, hand them out, run the round-end hooks
// (the sends held back during the round leave together), then the tasks
// posted so far. A task posted on the loop's thread so runs after the
// answers of its round went out.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <compare>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace qf::io {

/// The events of on_ready() after which a read or a write may go on; an
/// error or a hang-up counts as both, so that the next call reports it.
constexpr uint32_t input_events = EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR;
constexpr uint32_t output_events = EPOLLOUT | EPOLLHUP | EPOLLERR;
/// The peer closed its end, or the connection broke. Input that came
/// before is read first, and a read that comes back short has not reached
/// the end: read on until it does, as no further event will say so.
constexpr uint32_t hang_up_events = EPOLLRDHUP | EPOLLHUP | EPOLLERR;

/// Told what epoll reported for a descriptor it watches.
class watcher {
public:
  virtual ~watcher() = default;
  /// events: EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLHUP, EPOLLERR.
  virtual void on_ready(uint32_t events) = 0;
};

class event_loop;

/// A descriptor watched by a loop. The loop holds its watcher weakly: one
/// that is gone hears nothing. Closing the watch closes the descriptor.
class watch {
public:
  watch() = default;
  ~watch();
  watch(watch&& other) noexcept;
  watch& operator=(watch&& other) noexcept;
  watch(const watch&) = delete;
  watch& operator=(const watch&) = delete;

  explicit operator bool() const {
    return entry_ != nullptr;
  }
  int fd() const;
  /// Stops watching and closes the descriptor; safe from any thread.
  void close();

private:
  friend class event_loop;
  struct entry;
  watch(std::shared_ptr<event_loop> loop, entry* e) : loop_(std::move(loop)), entry_(e) {
    // nop
  }

  std::shared_ptr<event_loop> loop_;
  entry* entry_ = nullptr;
};

class event_loop : public std::enable_shared_from_this<event_loop> {
public:
  using task = std::function<void()>;

  /// Throws std::system_error when the kernel refuses an epoll set.
  static std::shared_ptr<event_loop> create();
  ~event_loop();

  event_loop(const event_loop&) = delete;
  event_loop& operator=(const event_loop&) = delete;

  /// Watches fd (non-blocking, owned from now on) for input and output,
  /// edge-triggered: each event reports a change, so the watcher reads
  /// until the kernel says EAGAIN or a read comes back short, and writes
  /// until the socket is full. An fd that is ready already is reported.
  /// On failure the fd is closed and the watch is empty.
  watch add(int fd, std::weak_ptr<watcher> w);

  /// Runs fn on the loop's thread, in the task phase of a round; safe from
  /// any thread. Never runs once the loop stopped.
  void post(task fn);
  /// Runs fn now on the loop's thread, else posts it. A template, so that
  /// the call made on the loop's thread wraps nothing in a task (a
  /// capture too big for std::function's buffer, as a shared_ptr is,
  /// would cost an allocation per call).
  template <class F>
  void dispatch(F&& fn) {
    if (in_loop_thread())
      std::forward<F>(fn)();
    else
      post(task(std::forward<F>(fn)));
  }
  /// On the loop's thread: runs fn once the events of this round were
  /// handed out, before the tasks.
  void at_round_end(task fn);
  /// A timer, for cancel().
  struct timer {
    std::chrono::steady_clock::time_point at;
    uint64_t number = 0;
    auto operator<=>(const timer&) const = default;
  };
  /// On the loop's thread: runs fn in the first round that begins `delay`
  /// or more from now, after that round's events. fn still checks whether
  /// what it was for stands (a weak_ptr, a state).
  timer after(std::chrono::milliseconds delay, task fn);
  /// On the loop's thread: the timer will not run (nothing if it ran).
  /// What a connection arms for itself it cancels when it closes: under
  /// connection churn, timers left to expire would pile up by the
  /// hundred thousand.
  void cancel(const timer& t);
  bool in_loop_thread() const;

  /// Serves on a thread of its own until stop().
  void start();
  /// Stops the thread; what was posted and not run is dropped.
  void stop();

private:
  friend class watch;
  event_loop(int epoll_fd, int wake_fd);
  void run();
  /// Waits for events and hands them out; false once stopped.
  bool wait_and_dispatch();
  void release(watch::entry* e);
  void run_round_end();
  void run_tasks();
  /// epoll_wait's timeout: -1 without timers, else until the first is due.
  int wait_timeout_ms(bool more_now) const;
  void run_due_timers();

  const int epoll_fd_;
  const int wake_fd_; // an eventfd: posts from other threads end the wait
  std::thread thread_;

  std::mutex mtx_;
  std::vector<task> posted_; // from other threads
  bool stopped_ = false;
  bool waiting_ = false; // in epoll_wait, or about to be: a post must wake it

  // The loop's thread only.
  std::vector<task> local_; // posted on the loop's thread
  std::vector<task> running_;
  std::vector<task> round_end_;
  std::vector<task> round_end_running_;
  std::vector<watch::entry*> released_; // freed once the round's events are out
  std::map<timer, task> timers_; // by deadline
  uint64_t timers_armed_ = 0;
};

} // namespace qf::io
