// Placeholder until the tokenizer lands (issue 3): the commands exist but refuse to run.
#include "commands.hpp"

#include <genie/error.hpp>

namespace genie::cli {

int cmd_tokenize(Args) { throw Error(ErrorCode::Unsupported, "tokenize: the tokenizer is not built yet"); }
int cmd_detokenize(Args) { throw Error(ErrorCode::Unsupported, "detokenize: the tokenizer is not built yet"); }
int cmd_convert_tokenizer(Args) { throw Error(ErrorCode::Unsupported, "convert-tokenizer: not built yet"); }

}  // namespace genie::cli
