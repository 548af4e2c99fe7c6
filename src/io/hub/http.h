// src/io/hub/http.h — the one HTTP call the hub client makes, over libcurl. Internal to src/io/hub.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace hfx::hub::detail {

struct HttpRequest {
  std::string method = "GET";  ///< GET or HEAD
  std::string url;
  std::string token;        ///< sent as "Authorization: Bearer ..." when not empty
  uint64_t range_from = 0;  ///< > 0: "Range: bytes=N-" (resume)
  bool follow_redirects = false;
  /// Receives a 2xx body in chunks with its status (200, or 206 for a range); returns false to abort.
  /// Empty: the body is kept in the response. Bodies of other statuses always go to the response.
  std::function<bool(long status, const char* data, size_t n)> sink;
};

struct HttpResponse {
  long status = 0;                             ///< 0 when the transfer failed before a status line
  std::map<std::string, std::string> headers;  ///< names lower-cased; the last response's headers
  std::string body;                            ///< when the request had no sink
  int transport_error = 0;                     ///< CURLcode; 0 = the transfer completed
  std::string transport_message;
  std::string header(const std::string& lower_name) const;
};

/// Performs one request. Never throws for HTTP statuses; transport failures are in transport_error.
HttpResponse http_perform(const HttpRequest& request);

/// Percent-encodes `s` as Python's urllib.parse.quote does with safe="" (or "/" when keep_slash).
std::string url_quote(const std::string& s, bool keep_slash);

}  // namespace hfx::hub::detail
