#include "reports/HtmlDocument.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/Strings.hpp"

namespace attnsim {

namespace {

bool wordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A line of a pipe table split into its cells (a backslash-escaped `|` stays in its cell).
std::vector<std::string> pipeCells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  if (!cell.empty()) cells.push_back(cell);
  return cells;
}

// A cell of a generated table: escaped, keeping its <br> line breaks.
std::string cellHtml(const std::string& text) {
  std::string out = escapeHtml(text);
  for (std::size_t at = out.find("&lt;br&gt;"); at != std::string::npos; at = out.find("&lt;br&gt;", at)) {
    out.replace(at, 10, "<br>");
  }
  return out;
}

std::string tableHtml(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                      bool keep_breaks) {
  auto cell = [keep_breaks](const std::string& s) { return keep_breaks ? cellHtml(s) : escapeHtml(s); };
  std::string html = "<table>\n<thead><tr>";
  for (const auto& h : header) html += "<th>" + cell(h) + "</th>";
  html += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    html += "<tr>";
    for (const auto& c : row) html += "<td>" + cell(c) + "</td>";
    html += "</tr>\n";
  }
  return html + "</tbody></table>\n";
}

bool separatorRow(const std::string& line) { return line.find_first_not_of("|-: ") == std::string::npos; }

constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; }
figure { margin: 1em 0; overflow-x: auto; }
figcaption { font-size: 13px; color: #444; }
)";

}  // namespace

std::string escapeHtml(std::string_view text) { return escapeMarkup(text, "&#39;"); }

std::string escapeMarkdown(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool prev_word = i > 0 && wordChar(text[i - 1]);
    const bool next_word = i + 1 < text.size() && wordChar(text[i + 1]);
    if (c == '&' || c == '<' || c == '>') {
      out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : "&gt;";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c == '\\' || c == '`' || c == '*' || c == '[' || c == ']' || c == '|' || (c == '#' && i == 0) ||
               (c == '_' && !(prev_word && next_word))) {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

void HtmlDocument::heading(const std::string& text, int level) {
  blocks_.push_back({std::string(static_cast<std::size_t>(level), '#') + " " + escapeMarkdown(text) + "\n\n",
                     fmt::format("<h{0}>{1}</h{0}>\n", level, escapeHtml(text))});
}

void HtmlDocument::paragraph(const std::string& text) {
  blocks_.push_back({escapeMarkdown(text) + "\n\n", "<p>" + escapeHtml(text) + "</p>\n"});
}

void HtmlDocument::command(const std::string& text) {
  // A fence longer than any run of backquotes in the text keeps it verbatim.
  std::size_t longest = 0;
  for (std::size_t at = 0, run = 0; at < text.size(); ++at) {
    run = text[at] == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<std::size_t>(3, longest + 1), '`');
  blocks_.push_back(
      {fence + "sh\n" + text + "\n" + fence + "\n\n", "<pre><code>" + escapeHtml(text) + "</code></pre>\n"});
}

void HtmlDocument::table(const ReportTable& table) {
  std::string md = "|";
  for (const auto& h : table.header) md += " " + escapeMarkdown(h) + " |";
  md += "\n|";
  for (std::size_t i = 0; i < table.header.size(); ++i) md += "---|";
  md += "\n";
  for (const auto& row : table.rows) {
    md += "|";
    for (const auto& c : row) md += " " + escapeMarkdown(c) + " |";
    md += "\n";
  }
  blocks_.push_back({md + "\n", tableHtml(table.header, table.rows, false)});
}

void HtmlDocument::figure(const ReportFigure& figure) {
  blocks_.push_back(
      {fmt::format("![{}]({})\n\n{}\n\n", escapeMarkdown(figure.caption), figure.file, escapeMarkdown(figure.caption)),
       fmt::format("<figure>\n{}<figcaption>{}</figcaption>\n</figure>\n", figure.svg, escapeHtml(figure.caption))});
  figures_.push_back(figure);
}

void HtmlDocument::markdownSection(const std::string& markdown) {
  std::string html;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  auto flush = [&] {
    if (!header.empty()) html += tableHtml(header, rows, true);
    header.clear();
    rows.clear();
  };
  std::istringstream in(markdown);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '|') {
      if (header.empty()) {
        header = pipeCells(line);
      } else if (!separatorRow(line)) {
        rows.push_back(pipeCells(line));
      }
      continue;
    }
    flush();
    const auto level = line.find_first_not_of('#');
    if (level > 0 && level != std::string::npos && line[level] == ' ') {
      html += fmt::format("<h{0}>{1}</h{0}>\n", std::min<std::size_t>(level + 1, 6), cellHtml(line.substr(level + 1)));
    } else if (!line.empty()) {
      html += "<p>" + cellHtml(line) + "</p>\n";
    }
  }
  flush();
  blocks_.push_back({markdown + "\n", html});
}

std::string HtmlDocument::markdown() const {
  std::string md = "# " + escapeMarkdown(title_) + "\n\n";
  for (const auto& b : blocks_) md += b.markdown;
  return md;
}

std::string HtmlDocument::html() const {
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{0}</title>\n<style>{1}</style>\n"
      "</head>\n<body>\n<h1>{0}</h1>\n",
      escapeHtml(title_), kStyle);
  for (const auto& b : blocks_) html += b.html;
  return html + "</body>\n</html>\n";
}

}  // namespace attnsim
