#pragma once
// Reading the measurement harness's CSV: every row is validated (line, column, what is wrong)
// and mapped to the catalog (device name -> hardware profile, implementation -> kernel family)
// before anything is stored.
#include <map>
#include <string>
#include <vector>

#include "study/Store.hpp"

namespace attnsim {

class Catalog;

// Parses and validates a whole file. Throws InputError listing the bad rows (up to 20) when any is bad.
std::vector<MeasurementRow> readMeasurementCsv(const std::string& path, const Catalog& catalog);
std::vector<MeasurementRow> parseMeasurementCsv(const std::string& text, const std::string& source,
                                                const Catalog& catalog);

// Splits one CSV record (RFC 4180 quoting). `unterminated`, when given, tells whether a quoted
// cell was still open at the end of the line.
std::vector<std::string> splitCsvLine(const std::string& line, bool* unterminated = nullptr);

struct MeasurementImport {
  std::size_t rows = 0;
  std::map<std::string, int> by_hardware_and_kind;  // "hardware kind" -> rows
};

// Every file is read and validated before the study file is opened, so a bad file leaves no
// study behind; then all rows go in one transaction.
MeasurementImport importMeasurements(const std::vector<std::string>& files, const std::string& db,
                                     const Catalog& catalog);

}  // namespace attnsim
