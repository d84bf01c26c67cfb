// page(): the report page around a document. The template (page/report.html)
// has five placeholders, filled in one pass so that nothing inserted is read
// again as a placeholder:
//   @CSP@     the Content-Security-Policy (Note [The page's policy])
//   @NONCE@   the nonce that lets the page's own style and script run
//   @STYLE@   uPlot's CSS, then report.css
//   @DATA@    the document, as JSON with <, > and & escaped
//   @SCRIPT@  uPlot, then report.js
//
// Note [The page's policy]
// Every name in the data (sites, managers, arrays) is arbitrary text, and the
// page shows it with textContent only. As a second line of defence the page
// allows only its own nonce'd script and style: markup that slipped into the
// page anyway could neither run a handler (inline handlers carry no nonce)
// nor load anything. A saved page fetches nothing (connect-src 'none'); the
// live page fetches its own server's debug endpoints only. The data sits in
// a JSON script element, which the browser never runs, and its <, > and &
// are \u escapes, so no string in it can close the element.
#include <algorithm>
#include <array>
#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndgc/error.hpp"
#include "ndgc/report.hpp"
#include "page_assets.hpp"
#include "support/atomic_write.hpp"

namespace ndgc::report {
namespace {

std::string_view asset(std::string_view name) {
  std::string_view text = page_asset(name);
  if (text.empty()) throw Error(fmt::format("report: the page's {} was not embedded at build time", name));
  return text;
}

// 128 random bits, base64: a fresh nonce for every page written.
std::string make_nonce() {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::random_device device;
  std::string nonce;
  for (int i = 0; i < 22; ++i) nonce += kDigits[device() % 64];
  return nonce;
}

std::string policy(PageKind kind, const std::string& nonce) {
  return fmt::format("default-src 'none'; script-src 'nonce-{0}'; style-src 'nonce-{0}'; img-src data:; "
                     "connect-src {1}; base-uri 'none'; form-action 'none'",
                     nonce, kind == PageKind::live ? "'self'" : "'none'");
}

// The document, checked and made safe inside a script element.
std::string embedded_data(std::string_view document_json) {
  nlohmann::json doc = nlohmann::json::parse(document_json.begin(), document_json.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("format", "") != "ndgc-report")
    throw DataError("report::page: the document is not a JSON object of format \"ndgc-report\"");
  std::string text = doc.dump();
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string page(std::string_view document_json, PageKind kind) {
  const std::string nonce = make_nonce();
  const std::string data = embedded_data(document_json);
  const std::string style = std::string(asset("uPlot.min.css")) + "\n" + std::string(asset("report.css"));
  const std::string script = std::string(asset("uPlot.iife.min.js")) + "\n" + std::string(asset("report.js"));
  const std::string csp = policy(kind, nonce);
  const std::array<std::pair<std::string_view, const std::string*>, 5> fills{
      {{"@CSP@", &csp}, {"@NONCE@", &nonce}, {"@STYLE@", &style}, {"@DATA@", &data}, {"@SCRIPT@", &script}}};

  const std::string_view html = asset("report.html");
  std::string out;
  out.reserve(html.size() + data.size() + style.size() + script.size() + 256);
  std::size_t at = 0;
  while (at < html.size()) {
    const std::size_t mark = html.find('@', at);
    if (mark == std::string_view::npos) break;
    const auto fill = std::find_if(fills.begin(), fills.end(),
                                   [&](const auto& f) { return html.substr(mark, f.first.size()) == f.first; });
    out.append(html.substr(at, mark - at));
    if (fill == fills.end()) {
      out += '@';
      at = mark + 1;
    } else {
      out += *fill->second;
      at = mark + fill->first.size();
    }
  }
  out.append(html.substr(std::min(at, html.size())));
  return out;
}

void write_page(const std::filesystem::path& file, std::string_view document_json) {
  const std::string text = page(document_json);
  support::write_atomically(file, "report::write_page", [&](std::ostream& out) { return bool(out << text); });
}

}  // namespace ndgc::report
