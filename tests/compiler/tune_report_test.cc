// The report of a tuning run (tune_report.cc), rendered for a small fixed
// result set: its titles, one polyline per candidate, one winner mark and
// one margin per shape where something ran, the summary, nothing external,
// and balanced tags; probes listed under their chart, and an unaligned
// variant's table charted on its own.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tune_report.h"

namespace {

kpack::TuneResults Fixture() {
  kpack::TuneResults r;
  r.package = "kernels";
  r.manifest_label = "manifests/kpack.yaml";
  r.gpu = "NVIDIA H100 80GB HBM3";
  r.sm = 90;
  r.driver = "580.159.04 (CUDA 13.0)";
  r.kpack_version = "0.1.0";
  r.repeats = 25;
  kpack::TunedResultKernel k;
  k.kernel = "softmax";
  k.manifest_hash = "0123456789abcdef";
  k.key = {{"rows", {1, 64}}, {"cols", {128, 1024, 8192}}};
  k.tuned = {"BLOCK"};
  k.candidates = {"BLOCK=256", "BLOCK=512", "BLOCK=1024"};
  kpack::TunedResultTable f16;
  f16.combo = {{"T", "f16"}};
  f16.label = "T=f16";
  f16.us = {{2.91, 3.15, 3.9}, {4.0, 3.2, 5.1}, {20.0, 14.0, 9.5},
            {3.0, 3.3, 4.0}, {5.0, 4.5, 4.0}, {40.0, 30.0, 33.0}};
  k.tables = {f16};
  r.kernels = {k};
  return r;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Every tag closed in order: <x ...> ... </x>, <x .../> alone, and
// <!DOCTYPE> the one exception.  Returns "" or what is wrong.
std::string Unbalanced(const std::string& html) {
  std::vector<std::string> open;
  for (size_t at = html.find('<'); at != std::string::npos; at = html.find('<', at + 1)) {
    size_t end = html.find('>', at);
    if (end == std::string::npos) return "a tag without '>'";
    std::string tag = html.substr(at + 1, end - at - 1);
    if (tag.rfind("!DOCTYPE", 0) == 0) continue;
    if (!tag.empty() && tag.back() == '/') continue;
    bool closing = !tag.empty() && tag[0] == '/';
    std::string name = tag.substr(closing ? 1 : 0, tag.find_first_of(" \n", closing ? 1 : 0) - (closing ? 1 : 0));
    if (!closing) {
      open.push_back(name);
    } else {
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

}  // namespace

TEST_CASE("tune report: charts, winners, margins, summary") {
  const std::string html = kpack::FormatTuneReport(Fixture());
  CHECK(Unbalanced(html) == "");
  CHECK(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK(html.find("<title>kpack tune: kernels on NVIDIA H100 80GB HBM3</title>") != std::string::npos);
  CHECK(html.find("<h1>kpack tune: kernels on NVIDIA H100 80GB HBM3</h1>") != std::string::npos);
  CHECK(html.find("<h3>softmax T=f16</h3>") != std::string::npos);
  // One chart; one polyline per candidate (each ran at every shape); one
  // winner and one margin per shape.
  CHECK(Count(html, "<svg ") == 1);
  CHECK(Count(html, "<polyline class=\"candidate\"") == 3);
  CHECK(Count(html, "data-candidate=\"BLOCK=512\"") == 1);
  CHECK(Count(html, "class=\"winner\"") == 6);
  CHECK(Count(html, "<text class=\"margin\"") == 7);  // and its caption
  CHECK(html.find(">margin</text>") != std::string::npos);
  CHECK(html.find(">1.082</text>") != std::string::npos);  // 3.15 / 2.91 at rows=1 cols=128
  CHECK(html.find(">1.474</text>") != std::string::npos);  // 14 / 9.5 at rows=1 cols=8192
  // The x axis: the shapes in grid order.
  size_t first = html.find(">rows=1 cols=128</text>"), last = html.find(">rows=64 cols=8192</text>");
  CHECK(first != std::string::npos);
  CHECK(last != std::string::npos);
  CHECK(first < last);
  // The legend and the summary (BLOCK=256 won 2 shapes, 512 two, 1024 two).
  CHECK(html.find("<text class=\"legend\" x=\"") != std::string::npos);
  CHECK(html.find("<tr><td>softmax</td><td>T=f16</td><td>6</td><td>BLOCK=256 &#215;2, BLOCK=512 &#215;2, "
                  "BLOCK=1024 &#215;2</td><td>1.082</td></tr>") != std::string::npos);
  // Self-contained: nothing fetched, no scripts.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("href=") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(kpack::FormatTuneReport(Fixture()) == html);
}

TEST_CASE("tune report: a candidate that may not run somewhere breaks its line") {
  kpack::TuneResults r = Fixture();
  kpack::TunedResultTable& t = r.kernels[0].tables[0];
  t.us[2][2] = std::nullopt;                                    // BLOCK=1024: gap at shape 2
  t.us[3] = {std::nullopt, std::nullopt, std::nullopt};         // nothing at shape 3
  t.us[4][0] = std::nullopt;                                    // BLOCK=256: alone at shape 5
  const std::string html = kpack::FormatTuneReport(r);
  CHECK(Unbalanced(html) == "");
  // BLOCK=256: shapes 0-2, then 5 alone (a point); 512: 0-2, 4-5; 1024: 0-1, 4-5.
  CHECK(Count(html, "data-candidate=\"BLOCK=256\"") == 1);
  CHECK(Count(html, "data-candidate=\"BLOCK=512\"") == 2);
  CHECK(Count(html, "data-candidate=\"BLOCK=1024\"") == 2);
  CHECK(Count(html, "<circle class=\"point\"") == 1);
  CHECK(Count(html, "class=\"winner\"") == 5);
  CHECK(Count(html, "<text class=\"margin\"") == 6);
}

TEST_CASE("tune report: text from the GPU and the labels is escaped") {
  kpack::TuneResults r = Fixture();
  r.gpu = "Fake <GPU> & \"co\"";
  const std::string html = kpack::FormatTuneReport(r);
  CHECK(html.find("Fake &lt;GPU&gt; &amp; &quot;co&quot;") != std::string::npos);
  CHECK(html.find("<GPU>") == std::string::npos);
  CHECK(Unbalanced(html) == "");
}

TEST_CASE("tune report: probes in a table under their chart, unaligned variants in their own charts") {
  kpack::TuneResults r = Fixture();
  kpack::TunedResultKernel& k = r.kernels[0];
  k.probes = {{8, 368}, {8, 3072}};
  kpack::TunedResultTable& t = k.tables[0];
  t.us.push_back({3.6, 3.0, std::nullopt});
  t.us.push_back({std::nullopt, std::nullopt, std::nullopt});
  kpack::TunedResultTable unaligned = t;
  unaligned.unaligned = true;
  unaligned.us[6] = {5.0, 6.0, 5.5};
  k.tables.push_back(unaligned);
  const std::string html = kpack::FormatTuneReport(r);
  CHECK(Unbalanced(html) == "");
  // A chart per variant; the probes are not on the charts' x axes.
  CHECK(Count(html, "<svg ") == 2);
  CHECK(html.find("<h3>softmax T=f16</h3>") != std::string::npos);
  CHECK(html.find("<h3>softmax T=f16 (unaligned variant)</h3>") != std::string::npos);
  CHECK(Count(html, "class=\"winner\"") == 12);
  CHECK(html.find(">rows=8 cols=368</text>") == std::string::npos);
  // Under each chart its probes: every candidate's time, the winner's bold.
  CHECK(Count(html, "<table class=\"probes\">") == 2);
  CHECK(html.find("<tr><td>rows=8 cols=368</td><td>BLOCK=512</td><td>1.200</td><td>3.6</td><td class=\"best\">3</td>"
                  "<td>&#8212;</td></tr>") != std::string::npos);
  CHECK(html.find("<tr><td>rows=8 cols=368</td><td>BLOCK=256</td><td>1.100</td><td class=\"best\">5</td><td>6</td>"
                  "<td>5.5</td></tr>") != std::string::npos);
  CHECK(Count(html, "<tr><td>rows=8 cols=3072</td><td>&#8212;</td><td>&#8212;</td><td>&#8212;</td><td>&#8212;</td>"
                    "<td>&#8212;</td></tr>") == 2);
  // The probe table sits after its chart, before the next title.
  const size_t second = html.find("<h3>softmax T=f16 (unaligned variant)</h3>");
  CHECK(html.find("<table class=\"probes\">") < second);
  CHECK(html.find("<table class=\"probes\">", second) != std::string::npos);
  // The summary: the grid's shapes, and the probes' winners apart.
  CHECK(html.find("<th>Probe wins</th>") != std::string::npos);
  CHECK(html.find("<tr><td>softmax</td><td>T=f16</td><td>6</td><td>BLOCK=256 &#215;2, BLOCK=512 &#215;2, "
                  "BLOCK=1024 &#215;2</td><td>1.082</td><td>BLOCK=512 &#215;1</td></tr>") != std::string::npos);
  CHECK(html.find("<tr><td>softmax</td><td>T=f16 (unaligned variant)</td><td>6</td>") != std::string::npos);
  CHECK(html.find("<td>BLOCK=256 &#215;1</td></tr>") != std::string::npos);
  CHECK(html.find("<p>Probes are shapes between the grid's values") != std::string::npos);
  CHECK(html.find("charted separately, titled &quot;(unaligned variant)&quot;") == std::string::npos);
  CHECK(html.find("charted separately, titled \"(unaligned variant)\"") != std::string::npos);
  // Without them, none of it.
  const std::string plain = kpack::FormatTuneReport(Fixture());
  CHECK(plain.find("<table class=\"probes\"") == std::string::npos);
  CHECK(plain.find("Probe") == std::string::npos);
  CHECK(plain.find("unaligned") == std::string::npos);
  CHECK(kpack::FormatTuneReport(r) == html);
}
