// The wire thread's loop against real sockets: readiness reported once per
// change, tasks from any thread run on the loop's thread after the round's
// events, and a watch closed from another thread mid-round hears nothing
// more and frees its descriptor.
#include "io/event_loop.hpp"
#include "io/round_clock.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace qf;
using namespace std::chrono_literals;

namespace {

struct socket_pair {
  int ours = -1;   // handed to the loop
  int theirs = -1; // written and read by the test
  socket_pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0) {
      ours = fds[0];
      theirs = fds[1];
    }
  }
  ~socket_pair() {
    if (theirs >= 0)
      ::close(theirs);
  }
};

/// Records what it is told, and on which thread.
struct recorder : io::watcher {
  std::mutex mtx;
  std::vector<uint32_t> events;
  std::thread::id thread;
  std::function<void(uint32_t)> also;

  void on_ready(uint32_t ev) override {
    {
      std::lock_guard guard{mtx};
      events.push_back(ev);
      thread = std::this_thread::get_id();
    }
    if (also)
      also(ev);
  }
  std::thread::id last_thread() {
    std::lock_guard guard{mtx};
    return thread;
  }
  size_t count(uint32_t mask) {
    std::lock_guard guard{mtx};
    size_t n = 0;
    for (auto ev : events)
      n += (ev & mask) != 0;
    return n;
  }
};

/// Runs fn on the loop's thread and waits for it.
template <class F>
auto on_loop(io::event_loop& loop, F fn) {
  std::promise<decltype(fn())> done;
  auto result = done.get_future();
  loop.post([&] {
    if constexpr (std::is_void_v<decltype(fn())>) {
      fn();
      done.set_value();
    } else {
      done.set_value(fn());
    }
  });
  EXPECT_EQ(result.wait_for(5s), std::future_status::ready);
  return result.get();
}

template <class Pred>
bool eventually(Pred pred) {
  for (auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(1ms))
    if (pred())
      return true;
  return pred();
}

} // namespace

TEST(event_loop, runs_tasks_posted_from_other_threads_on_its_own_thread) {
  auto loop = io::event_loop::create();
  loop->start();
  std::atomic<int> ran{0};
  std::vector<std::thread> posters;
  for (int t = 0; t < 4; ++t)
    posters.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        loop->post([&] {
          EXPECT_TRUE(loop->in_loop_thread());
          ++ran;
        });
    });
  for (auto& t : posters)
    t.join();
  EXPECT_TRUE(eventually([&] { return ran == 4000; })) << ran;
  EXPECT_FALSE(loop->in_loop_thread());
  loop->stop();
}

TEST(event_loop, reports_a_socket_ready_at_once_and_each_time_data_comes) {
  auto loop = io::event_loop::create();
  loop->start();
  socket_pair sp;
  ASSERT_GE(sp.ours, 0);
  auto rec = std::make_shared<recorder>();
  // Writable from the start: the first report comes without any data.
  auto w = on_loop(*loop, [&] { return loop->add(sp.ours, rec); });
  ASSERT_TRUE(w);
  EXPECT_TRUE(eventually([&] { return rec->count(EPOLLOUT) >= 1; }));
  EXPECT_EQ(rec->count(EPOLLIN), 0u);
  EXPECT_EQ(rec->last_thread(), on_loop(*loop, [] { return std::this_thread::get_id(); }));

  for (size_t i = 1; i <= 3; ++i) {
    ASSERT_EQ(::write(sp.theirs, "x", 1), 1);
    EXPECT_TRUE(eventually([&] { return rec->count(EPOLLIN) >= i; })) << i;
    char buf[8];
    EXPECT_EQ(on_loop(*loop, [&] { return ::read(w.fd(), buf, sizeof buf); }), 1);
  }
  // Edge-triggered: nothing new, nothing reported.
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(rec->count(EPOLLIN), 3u);

  ::close(sp.theirs);
  sp.theirs = -1;
  EXPECT_TRUE(eventually([&] { return rec->count(EPOLLRDHUP | EPOLLHUP) >= 1; }));
  on_loop(*loop, [&] { w.close(); });
  loop->stop();
}

TEST(event_loop, a_gone_watcher_hears_nothing) {
  auto loop = io::event_loop::create();
  loop->start();
  socket_pair sp;
  auto rec = std::make_shared<recorder>();
  auto w = on_loop(*loop, [&] { return loop->add(sp.ours, rec); });
  EXPECT_TRUE(eventually([&] { return rec->count(EPOLLOUT) >= 1; }));
  std::weak_ptr<recorder> gone = rec;
  rec.reset();
  ASSERT_EQ(::write(sp.theirs, "x", 1), 1);
  // A round must pass for the event to be dropped; a task after it shows it did.
  std::this_thread::sleep_for(20ms);
  on_loop(*loop, [] {});
  EXPECT_TRUE(gone.expired());
  loop->stop();
}

TEST(event_loop, round_end_hooks_run_after_the_events_and_before_the_tasks) {
  auto loop = io::event_loop::create();
  loop->start();
  socket_pair sp;
  std::mutex mtx;
  std::vector<std::string> order;
  auto note = [&](std::string what) {
    std::lock_guard guard{mtx};
    order.push_back(std::move(what));
  };
  auto rec = std::make_shared<recorder>();
  rec->also = [&](uint32_t ev) {
    if (!(ev & EPOLLIN))
      return;
    note("event");
    loop->post([&] { note("task"); });
    loop->at_round_end([&] { note("round end"); });
  };
  auto w = on_loop(*loop, [&] { return loop->add(sp.ours, rec); });
  ASSERT_EQ(::write(sp.theirs, "x", 1), 1);
  EXPECT_TRUE(eventually([&] {
    std::lock_guard guard{mtx};
    return order.size() == 3;
  }));
  EXPECT_EQ(order, (std::vector<std::string>{"event", "round end", "task"}));
  on_loop(*loop, [&] { w.close(); });
  loop->stop();
}

TEST(event_loop, a_watch_closed_from_another_thread_mid_round_hears_nothing_more) {
  auto loop = io::event_loop::create();
  loop->start();
  // Two sockets ready in one round: the first one's watcher closes the
  // second's watch through another thread while the round is under way.
  socket_pair first, second;
  auto rec_first = std::make_shared<recorder>();
  auto rec_second = std::make_shared<recorder>();
  io::watch w_first, w_second;
  on_loop(*loop, [&] {
    w_first = loop->add(first.ours, rec_first);
    w_second = loop->add(second.ours, rec_second);
  });
  EXPECT_TRUE(eventually([&] { return rec_second->count(EPOLLOUT) >= 1; }));

  std::atomic<bool> closed{false};
  auto closer = [&](uint32_t ev) {
    if (!(ev & EPOLLIN) || closed)
      return;
    std::thread([&] { w_second.close(); }).join();
    closed = true;
  };
  on_loop(*loop, [&] {
    rec_first->also = closer;
    rec_second->also = closer; // whichever the kernel reports first
  });
  auto before = rec_second->count(EPOLLIN);
  // The second first: once anything arrives, it may be closed.
  ASSERT_EQ(::write(second.theirs, "x", 1), 1);
  ASSERT_EQ(::write(first.theirs, "x", 1), 1);
  EXPECT_TRUE(eventually([&] { return closed.load(); }));
  on_loop(*loop, [] {});
  // The second heard at most the one report it may have had before the close.
  EXPECT_LE(rec_second->count(EPOLLIN), before + 1);
  EXPECT_FALSE(w_second);
  ASSERT_EQ(::send(second.theirs, "y", 1, MSG_NOSIGNAL), -1); // the loop's end is closed
  EXPECT_EQ(errno, EPIPE);
  on_loop(*loop, [&] { w_first.close(); });
  loop->stop();
}

TEST(event_loop, stopping_drops_what_was_posted_even_tasks_that_post_again) {
  auto loop = io::event_loop::create();
  loop->start();
  loop->stop();
  std::atomic<int> ran{0};
  auto capture = std::make_shared<int>(0);
  loop->post([&ran, capture] { ++ran; });
  EXPECT_EQ(capture.use_count(), 1) << "a task posted after stop() is kept";
  EXPECT_EQ(ran, 0);

  auto other = io::event_loop::create();
  // Not started: posted tasks wait, and are dropped by stop() without
  // running, their captures released (one of which posts again).
  struct posts_when_dropped {
    io::event_loop* loop = nullptr;
    ~posts_when_dropped() {
      if (loop)
        loop->post([] {});
    }
  };
  auto guard = std::make_shared<posts_when_dropped>();
  guard->loop = other.get();
  other->post([guard, &ran] { ++ran; });
  guard.reset();
  other->stop();
  EXPECT_EQ(ran, 0);
}

TEST(event_loop, statements_of_one_round_read_the_clock_the_loop_read_as_it_woke) {
  auto loop = io::event_loop::create();
  loop->start();
  auto [first, second] = on_loop(*loop, [] {
    auto a = io::round_clock::steady();
    std::this_thread::sleep_for(2ms);
    return std::pair{a, io::round_clock::steady()};
  });
  EXPECT_EQ(first, second); // one round, one reading
  auto next_round = on_loop(*loop, [] { return io::round_clock::steady(); });
  EXPECT_GE(next_round - first, 2ms);
  auto wall = on_loop(*loop, [] { return io::round_clock::wall_ms(); });
  EXPECT_LE(std::abs(wall - io::round_clock::wall_ms()), 1000); // the system clock's
  // Off a loop's thread the clock is read at each call.
  auto off = io::round_clock::steady();
  std::this_thread::sleep_for(1ms);
  EXPECT_GT(io::round_clock::steady(), off);
  loop->stop();
}

TEST(event_loop, timers_run_on_the_loop_in_deadline_order_and_not_before) {
  auto loop = io::event_loop::create();
  loop->start();
  std::mutex mtx;
  std::vector<std::string> ran;
  auto note = [&](std::string what) {
    std::lock_guard guard{mtx};
    ran.push_back(std::move(what));
  };
  auto started = std::chrono::steady_clock::now();
  std::atomic<bool> on_loop_thread{true};
  on_loop(*loop, [&] {
    loop->after(60ms, [&] {
      on_loop_thread = on_loop_thread && loop->in_loop_thread();
      note("60");
      loop->after(0ms, [&] { note("added by 60"); });
    });
    loop->after(20ms, [&] {
      note("20 at " + std::to_string((std::chrono::steady_clock::now() - started) / 1ms));
    });
  });
  ASSERT_TRUE(eventually([&] {
    std::lock_guard guard{mtx};
    return ran.size() == 3;
  }));
  std::lock_guard guard{mtx};
  EXPECT_EQ(ran[0].rfind("20 at ", 0), 0u);
  EXPECT_GE(std::stoi(ran[0].substr(6)), 20); // not early
  EXPECT_EQ(ran[1], "60");
  EXPECT_EQ(ran[2], "added by 60");
  EXPECT_TRUE(on_loop_thread);
  loop->stop();
}

TEST(event_loop, a_cancelled_timer_never_runs_and_cancelling_a_spent_one_is_harmless) {
  auto loop = io::event_loop::create();
  loop->start();
  std::atomic<int> ran{0};
  auto [cancelled, spent] = on_loop(*loop, [&] {
    auto a = loop->after(10ms, [&] { ran += 100; });
    auto b = loop->after(0ms, [&] { ran += 1; });
    loop->cancel(a);
    return std::pair{a, b};
  });
  ASSERT_TRUE(eventually([&] { return ran.load() == 1; }));
  on_loop(*loop, [&, b = spent, a = cancelled] {
    loop->cancel(b); // ran already
    loop->cancel(a); // cancelled already
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(ran.load(), 1);
  loop->stop();
}

TEST(event_loop, what_one_task_or_watcher_throws_stops_neither_the_loop_nor_the_others) {
  // One session's bug must not end the thread, and with it the process.
  auto loop = io::event_loop::create();
  loop->start();
  loop->post([] { throw std::runtime_error("a task's bug"); });
  std::atomic<bool> next_ran{false};
  loop->post([&] { next_ran = true; });
  EXPECT_TRUE(eventually([&] { return next_ran.load(); }));

  socket_pair pair;
  auto thrower = std::make_shared<recorder>();
  thrower->also = [](uint32_t) { throw std::runtime_error("a watcher's bug"); };
  auto watched = on_loop(*loop, [&] { return loop->add(pair.ours, thrower); });
  ASSERT_TRUE(watched);
  ASSERT_EQ(::write(pair.theirs, "x", 1), 1);
  EXPECT_TRUE(eventually([&] { return thrower->count(EPOLLIN) >= 1; }));
  EXPECT_EQ(on_loop(*loop, [] { return 7; }), 7) << "the loop stopped";
  on_loop(*loop, [&] { watched.close(); });
  loop->stop();
}
