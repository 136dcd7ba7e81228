#pragma once
// A report as a list of blocks (headings, paragraphs, commands, tables, figures) written two ways:
// Markdown (figures as SVG files beside it) and one self-contained HTML page (figures inline, no
// scripts, no network). Every text a block holds is escaped for the output it goes to, so a name
// from a store (a custom model called `<script>|x`) prints as text in both.
#include <string>
#include <string_view>
#include <vector>

namespace attnsim {

// &, <, >, " and ' as entities.
std::string escapeHtml(std::string_view text);
// Text that Markdown shows as written, also inside a table cell: HTML's specials as entities,
// Markdown's punctuation (`*`, `_` at a word's edge, backquote, brackets, `|`, backslash, a
// leading `#`) backslash-escaped, line breaks as spaces.
std::string escapeMarkdown(std::string_view text);

struct ReportTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // plain text, escaped when written
};

struct ReportFigure {
  std::string file;     // the SVG's file name beside the Markdown, e.g. "priorities-vllm.svg"
  std::string svg;      // a complete <svg> element (reports/SvgPlots)
  std::string caption;  // plain text
};

class HtmlDocument {
 public:
  explicit HtmlDocument(std::string title) : title_(std::move(title)) {}
  void heading(const std::string& text, int level = 2);
  void paragraph(const std::string& text);
  void command(const std::string& text);  // shown verbatim as a code block
  void table(const ReportTable& table);
  void figure(const ReportFigure& figure);
  // A Markdown section produced elsewhere (reports/SupportTables): written as is to Markdown,
  // and its headings, paragraphs and pipe tables converted for HTML with every cell escaped
  // (only <br> is kept as a line break).
  void markdownSection(const std::string& markdown);

  [[nodiscard]] std::string markdown() const;
  [[nodiscard]] std::string html() const;
  [[nodiscard]] const std::vector<ReportFigure>& figures() const { return figures_; }

 private:
  struct Block {
    std::string markdown, html;
  };
  std::string title_;
  std::vector<Block> blocks_;
  std::vector<ReportFigure> figures_;
};

}  // namespace attnsim
