// Sends ranges of files to sockets with sendfile(2), on one thread of its
// own per process, so that file data goes from the page cache to the socket
// without a copy through user space (Node.js has no sendfile of its own).
//
// The thread runs its own epoll set over duplicates of the sockets: libuv
// keeps the original descriptors (and goes on reading requests from them),
// and a socket closed by JavaScript stays open until its transfer here has
// ended, so a descriptor number is never reused under a running transfer.
// JavaScript hears of each transfer's end once, through a thread-safe
// function: its id, 0 or an errno, and the bytes sent.
#define NAPI_VERSION 8
#define _GNU_SOURCE
#include <node_api.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <time.h>
#include <unistd.h>

// Bytes one transfer sends before the others get their turn: every download progresses.
#define TURN_BYTES (1 << 20)
#define MAX_EVENTS 64
// How long the thread sleeps when nothing can be sent: the period of the stall check.
#define IDLE_WAIT_MS 1000

typedef struct transfer {
  uint32_t id;
  int socket_fd;  // duplicates, owned here
  int file_fd;
  off_t offset;
  uint64_t remaining;
  uint64_t sent;
  int64_t stall_ms;
  int send_buffer;  // SO_SNDBUF for the transfer, 0 = the kernel's autotuning
  int64_t last_progress_ms;
  int writable;    // the socket took all it was given last time (or is new)
  int cancelled;   // set by cancel() under the lock
  int failed;      // an errno met while adopting it
  struct transfer *next;
} transfer;

typedef struct {
  uint32_t id;
  int error;
  double sent;
} completion;

typedef struct {
  pthread_mutex_t lock;
  pthread_t thread;
  int epoll_fd;
  int wake_fd;
  int stopping;            // under the lock
  transfer *incoming;      // under the lock: started, not yet adopted by the thread
  transfer *active;        // changed by the thread under the lock; walked by cancel() under it
  napi_threadsafe_function on_done;
  uint32_t next_id;        // JavaScript's thread only
} sender;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake(sender *s) {
  uint64_t one = 1;
  ssize_t ignored = write(s->wake_fd, &one, sizeof one);
  (void)ignored;  // a full counter already wakes the thread
}

// TCP_CORK while a transfer runs, as nginx's tcp_nopush: only full segments go out, whatever
// each sendfile call's size (a non-TCP descriptor refuses it, which changes nothing).
static void cork(int socket_fd, int on) {
  setsockopt(socket_fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
}

static void release_transfer(sender *s, transfer *t) {
  cork(t->socket_fd, 0);  // the last partial segment goes now
  // Removed from the set before the close: a registration outlives a closed duplicate.
  epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, t->socket_fd, NULL);
  close(t->socket_fd);
  close(t->file_fd);
  free(t);
}

// Ends a transfer (already unlinked) and tells JavaScript.
static void finish(sender *s, transfer *t, int error) {
  completion *c = malloc(sizeof *c);
  uint32_t id = t->id;
  double sent = (double)t->sent;
  release_transfer(s, t);
  if (c == NULL) return;  // JavaScript's side times out; nothing else can be done without memory
  c->id = id;
  c->error = error;
  c->sent = sent;
  if (napi_call_threadsafe_function(s->on_done, c, napi_tsfn_nonblocking) != napi_ok) free(c);
}

// Adopts new transfers and ends the cancelled, failed and stalled ones; 1 when stopping.
static int housekeeping(sender *s) {
  pthread_mutex_lock(&s->lock);
  if (s->stopping) {
    pthread_mutex_unlock(&s->lock);
    return 1;
  }
  while (s->incoming != NULL) {
    transfer *t = s->incoming;
    s->incoming = t->next;
    struct epoll_event event = {.events = EPOLLOUT | EPOLLET, .data.ptr = t};
    if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, t->socket_fd, &event) != 0) t->failed = errno;
    cork(t->socket_fd, 1);
    if (t->send_buffer > 0) setsockopt(t->socket_fd, SOL_SOCKET, SO_SNDBUF, &t->send_buffer, sizeof t->send_buffer);
    t->writable = 1;
    t->last_progress_ms = now_ms();
    t->next = s->active;
    s->active = t;
  }
  int64_t now = now_ms();
  for (transfer **link = &s->active; *link != NULL;) {
    transfer *t = *link;
    int error = t->cancelled ? ECANCELED
                : t->failed ? t->failed
                : (!t->writable && now - t->last_progress_ms > t->stall_ms) ? ETIMEDOUT
                : 0;
    if (error) {
      *link = t->next;
      finish(s, t, error);
    } else {
      link = &t->next;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return 0;
}

// One turn: up to TURN_BYTES for each transfer whose socket can take data.
static int send_turn(sender *s) {
  int any_writable = 0;
  for (transfer **link = &s->active; *link != NULL;) {
    transfer *t = *link;
    if (!t->writable) {
      link = &t->next;
      continue;
    }
    size_t want = t->remaining < TURN_BYTES ? (size_t)t->remaining : TURN_BYTES;
    ssize_t n = sendfile(t->socket_fd, t->file_fd, &t->offset, want);
    int done = 0, error = 0;
    if (n > 0) {
      t->remaining -= (uint64_t)n;
      t->sent += (uint64_t)n;
      t->last_progress_ms = now_ms();
      done = t->remaining == 0;
    } else if (n == 0) {
      error = ENODATA;  // the file ended before the bytes announced
    } else if (errno == EAGAIN) {
      t->writable = 0;  // until epoll says the socket drained
    } else if (errno != EINTR) {
      error = errno;
    }
    if (done || error) {
      pthread_mutex_lock(&s->lock);
      *link = t->next;
      finish(s, t, error);
      pthread_mutex_unlock(&s->lock);
    } else {
      any_writable |= t->writable;
      link = &t->next;
    }
  }
  return any_writable;
}

static void *run(void *arg) {
  sender *s = arg;
  struct epoll_event events[MAX_EVENTS];
  int any_writable = 0;
  for (;;) {
    int n = epoll_wait(s->epoll_fd, events, MAX_EVENTS, any_writable ? 0 : IDLE_WAIT_MS);
    for (int i = 0; i < n; i++) {
      transfer *t = events[i].data.ptr;
      if (t == NULL) {
        uint64_t count;
        ssize_t ignored = read(s->wake_fd, &count, sizeof count);
        (void)ignored;
      } else {
        t->writable = 1;  // writable, or failed: the next sendfile says which
      }
    }
    if (housekeeping(s)) break;
    any_writable = send_turn(s);
  }
  return NULL;
}

static void call_js(napi_env env, napi_value callback, void *context, void *data) {
  (void)context;
  completion *c = data;
  if (env != NULL && callback != NULL) {
    napi_value undefined, argv[3];
    napi_get_undefined(env, &undefined);
    napi_create_uint32(env, c->id, &argv[0]);
    napi_create_int32(env, c->error, &argv[1]);
    napi_create_double(env, c->sent, &argv[2]);
    napi_call_function(env, undefined, callback, 3, argv, NULL);
  }
  free(c);
}

static void free_list(sender *s, transfer *t) {
  while (t != NULL) {
    transfer *next = t->next;
    release_transfer(s, t);
    t = next;
  }
}

// At the environment's teardown: stop the thread before anything it uses goes away.
static void cleanup(void *arg) {
  sender *s = arg;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_mutex_unlock(&s->lock);
  wake(s);
  pthread_join(s->thread, NULL);
  free_list(s, s->incoming);
  free_list(s, s->active);
  napi_release_threadsafe_function(s->on_done, napi_tsfn_abort);
  close(s->epoll_fd);
  close(s->wake_fd);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static napi_value throw_error(napi_env env, const char *message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

static sender *get_sender(napi_env env) {
  sender *s = NULL;
  napi_get_instance_data(env, (void **)&s);
  return s;
}

// init(onDone): starts the thread; onDone(id, errno, bytesSent) is called once per transfer.
static napi_value init(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], name;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (get_sender(env) != NULL) return throw_error(env, "sendfile: init was called already");
  napi_valuetype type;
  if (argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_function) {
    return throw_error(env, "sendfile: init needs a callback");
  }
  sender *s = calloc(1, sizeof *s);
  if (s == NULL) return throw_error(env, "sendfile: out of memory");
  s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event event = {.events = EPOLLIN, .data.ptr = NULL};
  if (s->epoll_fd < 0 || s->wake_fd < 0 || epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->wake_fd, &event) != 0) {
    if (s->epoll_fd >= 0) close(s->epoll_fd);
    if (s->wake_fd >= 0) close(s->wake_fd);
    free(s);
    return throw_error(env, "sendfile: cannot create the epoll set");
  }
  pthread_mutex_init(&s->lock, NULL);
  napi_create_string_utf8(env, "sendfile", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, NULL, NULL, NULL, call_js, &s->on_done) !=
      napi_ok) {
    close(s->epoll_fd);
    close(s->wake_fd);
    free(s);
    return throw_error(env, "sendfile: cannot create the callback");
  }
  // Idle, the sender keeps no process alive; a running transfer's socket does.
  napi_unref_threadsafe_function(env, s->on_done);
  if (pthread_create(&s->thread, NULL, run, s) != 0) {
    napi_release_threadsafe_function(s->on_done, napi_tsfn_abort);
    close(s->epoll_fd);
    close(s->wake_fd);
    free(s);
    return throw_error(env, "sendfile: cannot start the thread");
  }
  napi_set_instance_data(env, s, NULL, NULL);
  napi_add_env_cleanup_hook(env, cleanup, s);
  return NULL;
}

static int get_int64(napi_env env, napi_value value, int64_t *out) {
  return napi_get_value_int64(env, value, out) == napi_ok;
}

// start(socketFd, fileFd, offset, length, stallMs, sendBufferBytes) -> id
static napi_value start(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  sender *s = get_sender(env);
  if (s == NULL) return throw_error(env, "sendfile: init was not called");
  int64_t socket_fd, file_fd, offset, length, stall_ms, send_buffer;
  if (argc < 6 || !get_int64(env, argv[0], &socket_fd) || !get_int64(env, argv[1], &file_fd) ||
      !get_int64(env, argv[2], &offset) || !get_int64(env, argv[3], &length) || !get_int64(env, argv[4], &stall_ms) ||
      !get_int64(env, argv[5], &send_buffer) || socket_fd < 0 || socket_fd > INT32_MAX || file_fd < 0 ||
      file_fd > INT32_MAX || offset < 0 || length <= 0 || stall_ms <= 0 || send_buffer < 0 ||
      send_buffer > INT32_MAX / 2) {
    return throw_error(env, "sendfile: start(socketFd, fileFd, offset, length > 0, stallMs > 0, sendBufferBytes >= 0)");
  }
  transfer *t = calloc(1, sizeof *t);
  if (t == NULL) return throw_error(env, "sendfile: out of memory");
  t->socket_fd = fcntl((int)socket_fd, F_DUPFD_CLOEXEC, 0);
  t->file_fd = fcntl((int)file_fd, F_DUPFD_CLOEXEC, 0);
  if (t->socket_fd < 0 || t->file_fd < 0) {
    int error = errno;
    if (t->socket_fd >= 0) close(t->socket_fd);
    if (t->file_fd >= 0) close(t->file_fd);
    free(t);
    napi_throw_error(env, NULL, error == EBADF ? "sendfile: bad file descriptor" : "sendfile: cannot duplicate");
    return NULL;
  }
  uint32_t id = ++s->next_id;
  t->id = id;
  t->offset = (off_t)offset;
  t->remaining = (uint64_t)length;
  t->stall_ms = stall_ms;
  t->send_buffer = (int)send_buffer;
  // From here on the thread owns t, and may have ended and freed it by the time we return.
  pthread_mutex_lock(&s->lock);
  t->next = s->incoming;
  s->incoming = t;
  pthread_mutex_unlock(&s->lock);
  wake(s);
  napi_value result;
  napi_create_uint32(env, id, &result);
  return result;
}

static int cancel_in(transfer *t, uint32_t id) {
  for (; t != NULL; t = t->next) {
    if (t->id == id) {
      t->cancelled = 1;
      return 1;
    }
  }
  return 0;
}

// cancel(id) -> whether it was still running (its onDone then comes with ECANCELED)
static napi_value cancel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  sender *s = get_sender(env);
  uint32_t id;
  if (s == NULL || argc < 1 || napi_get_value_uint32(env, argv[0], &id) != napi_ok) {
    return throw_error(env, "sendfile: cancel(id) after init");
  }
  pthread_mutex_lock(&s->lock);
  int found = cancel_in(s->incoming, id) || cancel_in(s->active, id);
  pthread_mutex_unlock(&s->lock);
  if (found) wake(s);
  napi_get_boolean(env, found, &result);
  return result;
}

// sendBufferSize(socketFd) -> SO_SNDBUF as the kernel reports it (twice what was set: it counts
// its bookkeeping too); for tests and diagnostics.
static napi_value send_buffer_size(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok) return throw_error(env, "sendfile: sendBufferSize(fd)");
  int size = 0;
  socklen_t length = sizeof size;
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &length) != 0) return throw_error(env, "sendfile: not a socket");
  napi_create_int32(env, size, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor properties[] = {
      {"init", NULL, init, NULL, NULL, NULL, napi_enumerable, NULL},
      {"start", NULL, start, NULL, NULL, NULL, napi_enumerable, NULL},
      {"cancel", NULL, cancel, NULL, NULL, NULL, napi_enumerable, NULL},
      {"sendBufferSize", NULL, send_buffer_size, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties);
  return exports;
}
