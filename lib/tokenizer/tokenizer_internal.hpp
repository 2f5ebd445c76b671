// Internal entry points of the tokenizer layer for the other layers of libgenie.
#pragma once

#include <genie/tokenizer.hpp>

namespace genie::gguf {
class Reader;
}

namespace genie::tokenizer {

/// Builds a Tokenizer from an already-open GGUF file (the model loader uses this so the
/// file is parsed once). Throws genie::Error like Tokenizer::load.
Tokenizer make_tokenizer(const gguf::Reader& reader);

}  // namespace genie::tokenizer
