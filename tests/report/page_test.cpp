// report::page(): the template filled once, the data inert inside the page,
// the policy that forbids every fetch (Note [The page's policy]).
#include <doctest/doctest.h>

#include <ndgc/ndgc.hpp>
#include <ndgc/report.hpp>

namespace ndgc {
namespace {

std::string minimal_document(const std::string& title) {
  return R"({"format":"ndgc-report","version":1,"title":)" + title +
         R"(,"source":"snapshots","created_ms":0,"runs":[],"live":null})";
}

std::string csp_of(const std::string& html) {
  const std::string key = "Content-Security-Policy\" content=\"";
  const std::size_t at = html.find(key);
  REQUIRE(at != std::string::npos);
  const std::size_t start = at + key.size();
  return html.substr(start, html.find('"', start) - start);
}

}  // namespace

TEST_CASE("report::page: every placeholder filled, the page's files and uPlot inline, nothing fetched") {
  const std::string html = report::page(minimal_document(R"("a title")"));
  for (const char* placeholder : {"@CSP@", "@NONCE@", "@STYLE@", "@DATA@", "@SCRIPT@"})
    CHECK(html.find(placeholder) == std::string::npos);
  CHECK(html.find("uPlot") != std::string::npos);
  CHECK(html.find("ndgcReport") != std::string::npos);  // report.js
  CHECK(html.find("a title") != std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("<link rel=\"stylesheet") == std::string::npos);
  CHECK(html.find("href=\"http") == std::string::npos);
  const std::string csp = csp_of(html);
  CHECK(csp.find("default-src 'none'") != std::string::npos);
  CHECK(csp.find("connect-src 'none'") != std::string::npos);
  CHECK(csp.find("'unsafe-inline'") == std::string::npos);
}

TEST_CASE("report::page: a fresh nonce per page; the live page may fetch its own origin only") {
  const std::string a = report::page(minimal_document(R"("t")"));
  const std::string b = report::page(minimal_document(R"("t")"));
  CHECK(csp_of(a) != csp_of(b));
  const std::string live = report::page(minimal_document(R"("t")"), report::PageKind::live);
  CHECK(csp_of(live).find("connect-src 'self'") != std::string::npos);
}

TEST_CASE("report::page: markup in the data stays text: <, > and & are escapes inside the JSON") {
  const std::string html =
      report::page(minimal_document(R"("</script><img src=x onerror=alert(1)> & <!--")"));
  CHECK(html.find("<img src=x") == std::string::npos);
  CHECK(html.find("</script><img") == std::string::npos);
  CHECK(html.find("\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e \\u0026 \\u003c!--") !=
        std::string::npos);
}

TEST_CASE("report::page: a document that is not a report is a DataError naming the format") {
  CHECK_THROWS_WITH_AS(report::page("{\"format\":\"ndgc.snapshot\"}"), doctest::Contains("\"ndgc-report\""), DataError);
  CHECK_THROWS_WITH_AS(report::page("[1, 2"), doctest::Contains("not a JSON object"), DataError);
  CHECK_THROWS_WITH_AS(report::page(""), doctest::Contains("ndgc-report"), DataError);
}

TEST_CASE("report::write_page: written whole, or a DataError naming the file") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ndgc_report_page_test";
  std::filesystem::create_directories(dir);
  report::write_page(dir / "r.html", minimal_document(R"("t")"));
  CHECK(std::filesystem::file_size(dir / "r.html") > 50'000);  // uPlot alone is ~50 KB
  CHECK_FALSE(std::filesystem::exists(dir / "r.html.tmp"));
  CHECK_THROWS_WITH_AS(report::write_page(dir / "no" / "such" / "r.html", minimal_document(R"("t")")),
                       doctest::Contains("no/such/r.html"), DataError);
  std::filesystem::remove_all(dir);
}

}  // namespace ndgc
