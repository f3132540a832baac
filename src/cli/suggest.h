// "Did you mean": the closest of the words a command knows to one it does not. Used for
// misspelt commands and options (`fgpu stauts` → status, `--memroy` → --memory).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fgpu::cli {

// Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`: a swap
// counts once, since "stauts" is one slip of the fingers from "status".
std::size_t EditDistance(std::string_view a, std::string_view b);

// The candidate `word` most likely meant: the closest within a distance that grows with the
// word's length (1 for short words, about a third of longer ones), else the only candidate it
// begins (`stat` → status). None when nothing is close or the closest is tied.
std::optional<std::string> Suggest(std::string_view word, const std::vector<std::string>& candidates);

// "a, b or c" for messages that list what is allowed.
std::string JoinChoices(const std::vector<std::string>& choices);

}  // namespace fgpu::cli
