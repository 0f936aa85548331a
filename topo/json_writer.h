/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * json_writer.h - a minimal streaming JSON writer (objects, arrays, strings,
 * numbers, booleans, null) for strata-info's --json. Commas and escaping are
 * handled here; nesting is the caller's business (begin/end must pair).
 */
#ifndef STRATA_TOPO_JSON_WRITER_H
#define STRATA_TOPO_JSON_WRITER_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace strata {
namespace topo {

class JsonWriter {
public:
    JsonWriter &begin_object() { open('{'); return *this; }
    JsonWriter &end_object() { close('}'); return *this; }
    JsonWriter &begin_array() { open('['); return *this; }
    JsonWriter &end_array() { close(']'); return *this; }
    // Inside an object: the next value's key.
    JsonWriter &key(const std::string &k) {
        comma();
        quote(k);
        out_ += ':';
        after_key_ = true;
        return *this;
    }
    JsonWriter &str(const std::string &s) { comma(); quote(s); return *this; }
    JsonWriter &num(int64_t v) { comma(); out_ += std::to_string(v); return *this; }
    JsonWriter &num(double v) {
        comma();
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3f", v);
        out_ += buf;
        return *this;
    }
    JsonWriter &boolean(bool b) { comma(); out_ += b ? "true" : "false"; return *this; }
    JsonWriter &null() { comma(); out_ += "null"; return *this; }
    // Shorthands for "key": value.
    JsonWriter &kv(const std::string &k, const std::string &v) { return key(k).str(v); }
    JsonWriter &kv(const std::string &k, const char *v) { return key(k).str(v); }
    JsonWriter &kv(const std::string &k, int64_t v) { return key(k).num(v); }
    JsonWriter &kv(const std::string &k, int v) { return key(k).num((int64_t)v); }
    JsonWriter &kv(const std::string &k, uint64_t v) { return key(k).num((int64_t)v); }
    JsonWriter &kv(const std::string &k, double v) { return key(k).num(v); }
    JsonWriter &kb(const std::string &k, bool v) { return key(k).boolean(v); }
    // "" -> null, for optional strings.
    JsonWriter &kv_or_null(const std::string &k, const std::string &v) {
        key(k);
        return v.empty() ? null() : str(v);
    }
    const std::string &text() const { return out_; }

private:
    void open(char c) { comma(); out_ += c; first_.push_back(true); }
    void close(char c) { out_ += c; if (!first_.empty()) first_.pop_back(); }
    void comma() {
        if (after_key_) { after_key_ = false; return; }
        if (first_.empty()) return;
        if (!first_.back()) out_ += ',';
        first_.back() = false;
    }
    void quote(const std::string &s) {
        out_ += '"';
        for (unsigned char c : s) {
            switch (c) {
            case '"': out_ += "\\\""; break;
            case '\\': out_ += "\\\\"; break;
            case '\n': out_ += "\\n"; break;
            case '\r': out_ += "\\r"; break;
            case '\t': out_ += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out_ += buf;
                } else {
                    out_ += (char)c;
                }
            }
        }
        out_ += '"';
    }
    std::string out_;
    std::vector<bool> first_;
    bool after_key_ = false;
};

}  // namespace topo
}  // namespace strata

#endif
