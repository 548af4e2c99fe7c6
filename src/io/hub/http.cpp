// src/io/hub/http.cpp — libcurl easy handles, one per call (calls run on several threads at once; each
// handle stays on the thread that made it). curl_global_init runs once, before any handle exists.
#include "io/hub/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

namespace hfx::hub::detail {

namespace {

struct Transfer {
  const HttpRequest* req;
  HttpResponse* resp;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  // A new status line (after a redirect or a 100 Continue) starts a new header set.
  if (line.rfind("HTTP/", 0) == 0) {
    t->resp->headers.clear();
    auto sp = line.find(' ');
    t->resp->status = sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
    return size * n;
  }
  auto colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon), value = line.substr(colon + 1);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  auto strip = [](std::string& s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) i++;
    s.erase(0, i);
  };
  strip(value);
  t->resp->headers[name] = value;
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  // Bodies of error answers are kept for the message, never given to the sink.
  const long st = t->resp->status;
  if (t->req->sink && (st < 200 || st >= 300)) {
    t->resp->body.append(data, bytes);
    return bytes;
  }
  if (t->req->sink) {
    if (!t->req->sink(st, data, bytes)) return 0;
  } else {
    t->resp->body.append(data, bytes);
  }
  return bytes;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse http_perform(const HttpRequest& req) {
  global_init();
  HttpResponse resp;
  CURL* h = curl_easy_init();
  if (!h) {
    resp.transport_error = CURLE_FAILED_INIT;
    resp.transport_message = "curl_easy_init failed";
    return resp;
  }
  Transfer t{&req, &resp};
  curl_slist* headers = nullptr;
  // The Hub's ETag is the checksum of the stored bytes: ask for them as stored.
  headers = curl_slist_append(headers, "Accept-Encoding: identity");
  headers = curl_slist_append(headers, "User-Agent: hfx/" HFX_VERSION);
  if (!req.token.empty())
    headers = curl_slist_append(headers, ("Authorization: Bearer " + req.token).c_str());
  std::string range;
  if (req.range_from > 0) {
    range = std::to_string(req.range_from) + "-";
    curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
  }
  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  if (req.method == "HEAD") curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, req.follow_redirects ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  // Only HTTP(S), for the request and for wherever a redirect points.
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled transfer (under 1 byte/s for 60 s) fails and is resumed, instead of hanging forever.
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
  char err[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
  CURLcode rc = curl_easy_perform(h);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  resp.status = code;
  if (rc != CURLE_OK) {
    resp.transport_error = rc;
    resp.transport_message = err[0] ? err : curl_easy_strerror(rc);
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  return resp;
}

std::string url_quote(const std::string& s, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace hfx::hub::detail
