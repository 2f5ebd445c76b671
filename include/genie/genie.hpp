// libgenie: the umbrella header of the C++ API.
#pragma once

#include <genie/chat.hpp>
#include <genie/engine.hpp>
#include <genie/error.hpp>
#include <genie/memory_plan.hpp>
#include <genie/model.hpp>
#include <genie/sampler.hpp>
#include <genie/session.hpp>
#include <genie/tokenizer.hpp>
#include <genie/types.hpp>
#include <genie/version.h>
