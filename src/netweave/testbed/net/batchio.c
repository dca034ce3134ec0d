/* Batched datagram I/O for netweave.testbed.batchio: sendmmsg/recvmmsg over rows of a buffer.
 *
 * Built at first use by netweave.testbed.native.compile_shared (cc -O2 -shared -fPIC) and called
 * through ctypes, which releases the GIL for the duration of a call: a sender and a receiver in
 * two threads of one process run in parallel.
 *
 * Both functions return a count >= 0, or -errno on an error before anything was done; an error
 * after some datagrams were sent returns the count and stores the errno in *error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#define NW_BATCH 1024 /* datagrams per sendmmsg/recvmmsg call (the kernel's UIO_MAXIOV) */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is ready for `events`, at most until `deadline` (ms, CLOCK_MONOTONIC; < 0: forever).
 * Returns 1 ready, 0 timed out, -errno on error. Retries after signals. */
static int wait_for(int fd, short events, int64_t deadline)
{
	for (;;) {
		int wait = -1;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();
			if (left <= 0)
				left = 0;
			wait = left > 2147483647 ? 2147483647 : (int)left;
		}
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, wait);
		if (r > 0)
			return 1;
		if (r == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

/* Send rows 0..k-1 of buf (row i: lengths[i] bytes at buf + i * stride) to addr (NULL: the
 * socket's connected peer). EAGAIN/EWOULDBLOCK: wait for writability; ENOBUFS (a full queue
 * below the socket): wait 50 us; both retry, until timeout_ms (< 0: no limit). */
long nw_send_batch(int fd, const uint8_t *buf, long k, long stride, const uint32_t *lengths,
		   const void *addr, int addrlen, long timeout_ms, int *error)
{
	struct mmsghdr msgs[NW_BATCH];
	struct iovec iov[NW_BATCH];
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	long sent = 0;
	*error = 0;
	while (sent < k) {
		long n = k - sent < NW_BATCH ? k - sent : NW_BATCH;
		for (long i = 0; i < n; i++) {
			iov[i].iov_base = (void *)(buf + (sent + i) * stride);
			iov[i].iov_len = lengths[sent + i];
			memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
			msgs[i].msg_hdr.msg_name = (void *)addr;
			msgs[i].msg_hdr.msg_namelen = addr ? (socklen_t)addrlen : 0;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		int r = sendmmsg(fd, msgs, (unsigned int)n, MSG_DONTWAIT);
		if (r > 0) {
			sent += r;
			continue;
		}
		int e = r == 0 ? EAGAIN : errno;
		if (e == EINTR)
			continue;
		if (e == EAGAIN || e == EWOULDBLOCK) {
			int w = wait_for(fd, POLLOUT, deadline);
			if (w > 0)
				continue;
			if (w == 0)
				break; /* timed out: the count so far */
			e = -w;
		} else if (e == ENOBUFS) {
			if (deadline >= 0 && now_ms() >= deadline)
				break;
			struct timespec pause = {0, 50000};
			nanosleep(&pause, NULL);
			continue;
		}
		*error = e;
		return sent ? sent : -e;
	}
	return sent;
}

/* Wait up to timeout_ms (< 0: forever) for a first datagram, then take what is queued, up to k,
 * into rows of out (stride bytes each). lengths[i]: the datagram's full length (MSG_TRUNC), so a
 * length above stride means row i holds only its first stride bytes. */
long nw_recv_batch(int fd, uint8_t *out, long k, long stride, uint32_t *lengths, long timeout_ms, int *error)
{
	struct mmsghdr msgs[NW_BATCH];
	struct iovec iov[NW_BATCH];
	long got = 0;
	*error = 0;
	if (k <= 0)
		return 0;
	int w = wait_for(fd, POLLIN, timeout_ms < 0 ? -1 : now_ms() + timeout_ms);
	if (w <= 0) {
		*error = w < 0 ? -w : 0;
		return w;
	}
	while (got < k) {
		long n = k - got < NW_BATCH ? k - got : NW_BATCH;
		for (long i = 0; i < n; i++) {
			iov[i].iov_base = out + (got + i) * stride;
			iov[i].iov_len = (size_t)stride;
			memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		int r = recvmmsg(fd, msgs, (unsigned int)n, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			*error = errno;
			return got ? got : -errno;
		}
		for (int i = 0; i < r; i++)
			lengths[got + i] = msgs[i].msg_len;
		got += r;
		if (r < n)
			break; /* the queue is empty */
	}
	return got;
}
