// SPDX-License-Identifier: BSD-3-Clause
// A shared mutex whose exclusive lockers go first: once one waits, new shared lockers wait
// behind it. std::shared_mutex is glibc's default rwlock, which prefers readers: threads that
// take it shared back to back (replicated_pool's writers, one call after another) keep an
// exclusive locker (a catch-up's last round, resync, close) out for as long as they write.
// Not recursive: a thread holding it shared must not take it shared again.
#pragma once

#include <pthread.h>
#include <system_error>

namespace rpmem::replication
{

class writer_first_mutex
{
public:
	writer_first_mutex()
	{
		pthread_rwlockattr_t a;
		pthread_rwlockattr_init(&a);
		pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		const int err = pthread_rwlock_init(&rw_, &a);
		pthread_rwlockattr_destroy(&a);
		if (err != 0)
			throw std::system_error(err, std::generic_category(),
			                        "pthread_rwlock_init");
	}
	~writer_first_mutex() { pthread_rwlock_destroy(&rw_); }
	writer_first_mutex(const writer_first_mutex &) = delete;
	writer_first_mutex &operator=(const writer_first_mutex &) = delete;

	void lock() { check(pthread_rwlock_wrlock(&rw_), "pthread_rwlock_wrlock"); }
	bool try_lock() { return pthread_rwlock_trywrlock(&rw_) == 0; }
	void unlock() { pthread_rwlock_unlock(&rw_); }
	void lock_shared() { check(pthread_rwlock_rdlock(&rw_), "pthread_rwlock_rdlock"); }
	bool try_lock_shared() { return pthread_rwlock_tryrdlock(&rw_) == 0; }
	void unlock_shared() { pthread_rwlock_unlock(&rw_); }

private:
	static void check(int err, const char *what)
	{
		if (err != 0)
			throw std::system_error(err, std::generic_category(), what);
	}
	pthread_rwlock_t rw_;
};

} // namespace rpmem::replication
