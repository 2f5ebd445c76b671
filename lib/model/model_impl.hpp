// What a loaded genie::Model holds.
#pragma once

#include "gguf/gguf_reader.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"

#include <genie/model.hpp>
#include <genie/tokenizer.hpp>

namespace genie {

struct Model::Impl {
    gguf::Reader reader;  // owns the mapping the weights point into
    model::HParams hparams;
    model::Weights weights;
    Tokenizer tokenizer;
    ModelInfo info;
    ModelOptions options;
    double load_ms = 0;
};

}  // namespace genie
