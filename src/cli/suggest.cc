#include "cli/suggest.h"

#include <algorithm>
#include <cctype>

namespace fgpu::cli {
namespace {

std::string Lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

// Further than this and the suggestion is more likely a guess than a correction.
std::size_t MostEditsFor(std::string_view word) { return std::max<std::size_t>(1, word.size() / 3); }

}  // namespace

std::size_t EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein's table plus a transposition of neighbours.
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> Suggest(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string lower = Lowercase(word);
  std::optional<std::string> best;
  std::size_t best_distance = MostEditsFor(word) + 1;
  bool tied = false;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = EditDistance(lower, Lowercase(candidate));
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
      tied = false;
    } else if (distance == best_distance && best && *best != candidate) {
      tied = true;
    }
  }
  if (best && !tied) return best;
  // No close spelling: a word that begins exactly one candidate is an abbreviation of it.
  std::vector<std::string> extended;
  for (const std::string& candidate : candidates) {
    if (lower.size() >= 2 && Lowercase(candidate).rfind(lower, 0) == 0) extended.push_back(candidate);
  }
  if (extended.size() == 1) return extended.front();
  return std::nullopt;
}

std::string JoinChoices(const std::vector<std::string>& choices) {
  std::string text;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) text += i + 1 == choices.size() ? " or " : ", ";
    text += choices[i];
  }
  return text;
}

}  // namespace fgpu::cli
