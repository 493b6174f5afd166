// SPDX-License-Identifier: BSD-3-Clause
// Little-endian, bounds-checked encoding used by every rpmem wire format (control protocol and
// in-band fabric messages). One byte order everywhere: little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rpmem::wire
{

namespace detail
{
/** The one little-endian store of every rpmem wire format: the low n bytes of v at p. */
inline void store_le(std::uint8_t *p, std::uint64_t v, int n) noexcept
{
	for (int i = 0; i < n; ++i)
		p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
} // namespace detail

/** Appends little-endian fields to a growing byte buffer (the control protocol). */
class writer
{
public:
	explicit writer(std::vector<std::uint8_t> &out) : out_(out) {}

	void u8(std::uint8_t v) { out_.push_back(v); }
	void u16(std::uint16_t v) { put(v, 2); }
	void u32(std::uint32_t v) { put(v, 4); }
	void u64(std::uint64_t v) { put(v, 8); }
	void bytes(std::span<const std::uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
	void bytes(const void *p, std::size_t n)
	{
		bytes(std::span<const std::uint8_t>(static_cast<const std::uint8_t *>(p), n));
	}
	/** A string: u16 length, then the bytes (no terminator). */
	void str(std::string_view s)
	{
		u16(static_cast<std::uint16_t>(s.size()));
		bytes(s.data(), s.size());
	}
	std::size_t size() const { return out_.size(); }

private:
	void put(std::uint64_t v, int n)
	{
		const std::size_t at = out_.size();
		out_.resize(at + static_cast<std::size_t>(n));
		detail::store_le(out_.data() + at, v, n);
	}
	std::vector<std::uint8_t> &out_;
};

/**
 * Writes little-endian fields into a caller's buffer, with the same fields as writer: for the
 * fixed layouts of the lane messages, built in place on the data path (no allocation). The
 * caller sizes the buffer from the layout's constants; the writer does not check it.
 */
class fixed_writer
{
public:
	explicit fixed_writer(std::uint8_t *out) noexcept : p_(out) {}

	void u16(std::uint16_t v) noexcept { put(v, 2); }
	void u32(std::uint32_t v) noexcept { put(v, 4); }
	void u64(std::uint64_t v) noexcept { put(v, 8); }
	void bytes(const void *p, std::size_t n) noexcept
	{
		std::memcpy(p_, p, n);
		p_ += n;
	}
	/** Bytes written so far are [out, pos()). */
	std::uint8_t *pos() const noexcept { return p_; }

private:
	void put(std::uint64_t v, int n) noexcept
	{
		detail::store_le(p_, v, n);
		p_ += n;
	}
	std::uint8_t *p_;
};

/**
 * Reads little-endian fields from a byte span. Reading past the end never touches memory
 * outside the span: it marks the reader failed and returns zeros. Check ok() once at the end.
 */
class reader
{
public:
	explicit reader(std::span<const std::uint8_t> in) : in_(in) {}

	std::uint8_t u8() { return static_cast<std::uint8_t>(get(1)); }
	std::uint16_t u16() { return static_cast<std::uint16_t>(get(2)); }
	std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
	std::uint64_t u64() { return get(8); }
	bool bytes(void *dst, std::size_t n)
	{
		if (!take(n))
			return false;
		std::memcpy(dst, in_.data() + pos_ - n, n);
		return true;
	}
	/** A string written by writer::str, at most max_len bytes long. */
	std::string str(std::size_t max_len)
	{
		std::size_t n = u16();
		if (n > max_len) {
			ok_ = false;
			return {};
		}
		if (!take(n))
			return {};
		return std::string(reinterpret_cast<const char *>(in_.data() + pos_ - n), n);
	}
	bool ok() const { return ok_; }
	std::size_t remaining() const { return ok_ ? in_.size() - pos_ : 0; }
	/** True when everything was read and nothing is left over. */
	bool done() const { return ok_ && pos_ == in_.size(); }

private:
	bool take(std::size_t n)
	{
		if (!ok_ || n > in_.size() - pos_) {
			ok_ = false;
			return false;
		}
		pos_ += n;
		return true;
	}
	std::uint64_t get(int n)
	{
		if (!take(static_cast<std::size_t>(n)))
			return 0;
		std::uint64_t v = 0;
		for (int i = 0; i < n; ++i)
			v |= static_cast<std::uint64_t>(in_[pos_ - n + i]) << (8 * i);
		return v;
	}
	std::span<const std::uint8_t> in_;
	std::size_t pos_ = 0;
	bool ok_ = true;
};

} // namespace rpmem::wire
