// Jinja operators: arithmetic, `~`, comparisons' helpers and unary minus, with Python's semantics.
#include "chat/jinja_builtin_support.hpp"

#include <algorithm>
#include <cmath>

namespace genie::chat::jinja {

namespace {
[[noreturn]] void bad_operands(const char* op, const Value& a, const Value& b) {
    fail(std::string("unsupported operand type(s) for ") + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

Value repeat(const Value& seq, int64_t n) {
    if (n <= 0) return seq.is_string() ? Value::string("") : Value::list({}, seq.is_tuple());
    if (seq.is_string()) {
        const std::string& s = seq.as_string();
        check_string_size(s.size() * static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 40)));
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += s;
        return Value::string(std::move(out));
    }
    const auto& items = seq.as_list().items;
    charge(items.size() * static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 30)) * sizeof(Value));
    std::vector<Value> out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value::list(std::move(out), seq.is_tuple());
}

double floor_mod(double a, double b) {
    double m = std::fmod(a, b);
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}
}  // namespace

Value negate(const Value& v) {
    if (v.is_float()) return Value::floating(-v.as_double());
    if (v.is_int() || v.is_bool()) {
        if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow");
        return Value::integer(-v.as_int());
    }
    fail("bad operand type for unary -: '" + type_name(v) + "'");
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
    if (op == BinaryOp::Concat) return Value::string(to_str(a) + to_str(b));
    if (a.is_undefined() || b.is_undefined()) fail((a.is_undefined() ? a : b).undefined_hint() + " (used in arithmetic)");
    const bool numbers = a.is_number() && b.is_number();
    const bool floats = numbers && (a.is_float() || b.is_float());
    switch (op) {
        case BinaryOp::Add:
            if (numbers) {
                if (floats) return Value::floating(a.as_double() + b.as_double());
                int64_t r;
                if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
                return Value::integer(r);
            }
            if (a.is_string() && b.is_string()) {
                check_string_size(a.as_string().size() + b.as_string().size());
                return Value::string(a.as_string() + b.as_string());
            }
            if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
                std::vector<Value> items = a.as_list().items;
                items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
                return Value::list(std::move(items), a.is_tuple());
            }
            if (a.is_string() || b.is_string())
                fail("can only concatenate str (not \"" + type_name(a.is_string() ? b : a) + "\") to str");
            bad_operands("+", a, b);
        case BinaryOp::Subtract:
            if (!numbers) bad_operands("-", a, b);
            if (floats) return Value::floating(a.as_double() - b.as_double());
            {
                int64_t r;
                if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
                return Value::integer(r);
            }
        case BinaryOp::Multiply:
            if (numbers) {
                if (floats) return Value::floating(a.as_double() * b.as_double());
                int64_t r;
                if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
                return Value::integer(r);
            }
            if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
            if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
            bad_operands("*", a, b);
        case BinaryOp::Divide:
            if (!numbers) bad_operands("/", a, b);
            if (b.as_double() == 0) fail("division by zero");
            return Value::floating(a.as_double() / b.as_double());
        case BinaryOp::FloorDivide:
            if (!numbers) bad_operands("//", a, b);
            if (b.as_double() == 0) fail("integer division or modulo by zero");
            if (floats) return Value::floating(std::floor(a.as_double() / b.as_double()));
            {
                const int64_t x = a.as_int(), y = b.as_int();
                if (x == std::numeric_limits<int64_t>::min() && y == -1) fail("integer overflow");
                int64_t q = x / y;
                if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
                return Value::integer(q);
            }
        case BinaryOp::Modulo:
            if (a.is_string()) fail("printf-style '%' formatting is not supported; use the 'format' filter", ErrorCode::Unsupported);
            if (!numbers) bad_operands("%", a, b);
            if (b.as_double() == 0) fail("integer division or modulo by zero");
            if (floats) return Value::floating(floor_mod(a.as_double(), b.as_double()));
            {
                const int64_t x = a.as_int(), y = b.as_int();
                if (y == -1) return Value::integer(0);
                int64_t m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) m += y;
                return Value::integer(m);
            }
        case BinaryOp::Power:
            if (!numbers) bad_operands("**", a, b);
            if (!floats && b.as_int() >= 0) {
                int64_t result = 1, base = a.as_int(), e = b.as_int();
                while (e > 0) {
                    if (e & 1)
                        if (__builtin_mul_overflow(result, base, &result)) fail("integer overflow");
                    e >>= 1;
                    if (e > 0 && __builtin_mul_overflow(base, base, &base)) fail("integer overflow");
                }
                return Value::integer(result);
            }
            if (a.as_double() == 0 && b.as_double() < 0) fail("0.0 cannot be raised to a negative power");
            return Value::floating(std::pow(a.as_double(), b.as_double()));
        case BinaryOp::Concat: break;
    }
    fail("internal error: unknown operator", ErrorCode::Internal);
}

}  // namespace genie::chat::jinja
