// Renderer of the Jinja-subset engine: walks the syntax tree with a stack of variable scopes.
// The context is never copied as a whole; lookups copy the one value they return.
#include <cmath>
#include <map>

#include "codeact/core/template.hpp"
#include "template_internal.hpp"

namespace codeact::core {
namespace template_internal {
namespace {

class Renderer {
 public:
  Renderer(const Program& program, const Json& context)
      : program_(program), context_(context), strict_(program.options.strict_undefined) {
    scopes_.emplace_back();
  }

  Status render(const Body& body, std::string& out) {
    for (const auto& node : body) CODEACT_TRY_STATUS(render_node(node, out));
    return ok_status();
  }

 private:
  CallSite site(Position pos) { return CallSite{program_.name, strict_, pos, budget_}; }
  Error error(Position pos, const std::string& message) const {
    return template_error(program_.name, pos, message);
  }

  // Checks a value about to be used; an undefined value is an error in strict mode, an empty
  // string otherwise.
  Result<Json> use(const Value& v, Position pos, std::string_view how) const {
    if (!v.undefined) return v.json;
    if (strict_) return error(pos, v.hint + (how.empty() ? "" : " (" + std::string(how) + ")"));
    return Json("");
  }

  Status render_node(const Node& node, std::string& out) {
    switch (node.kind) {
      case Node::Kind::kText:
        CODEACT_TRY_STATUS(site(node.pos).spend(node.text.size(), "the text"));
        out += node.text;
        return ok_status();
      case Node::Kind::kOutput: {
        CODEACT_TRY(auto v, eval(*node.expr));
        CODEACT_TRY(auto j, use(v, node.expr->pos, "printed"));
        std::string text = python_str(j);
        CODEACT_TRY_STATUS(site(node.expr->pos).spend(text.size(), "printing this"));
        out += text;
        return ok_status();
      }
      case Node::Kind::kIf: {
        for (const auto& [cond, body] : node.branches) {
          CODEACT_TRY(auto c, eval(*cond));
          CODEACT_TRY(bool yes, truth(c, cond->pos));
          if (yes) return render(body, out);
        }
        return render(node.else_body, out);
      }
      case Node::Kind::kFor:
        return render_for(node, out);
      case Node::Kind::kSet: {
        Value value;
        if (node.expr) {
          CODEACT_TRY(auto v, eval(*node.expr));
          value = std::move(v);
        } else {
          std::string text;
          CODEACT_TRY_STATUS(render(node.body, text));
          value = Value{Json(text)};
        }
        return assign(node.targets, value, node.pos);
      }
    }
    return ok_status();
  }

  Result<bool> truth(const Value& v, Position pos) const {
    if (v.undefined) {
      if (strict_) return error(pos, v.hint + " (tested for truth)");
      return false;
    }
    return truthy(v.json);
  }

  Status assign(const std::vector<std::string>& targets, const Value& value, Position pos) {
    auto& scope = scopes_.back();
    if (targets.size() == 1) {
      scope[targets[0]] = value;
      return ok_status();
    }
    CODEACT_TRY(auto j, use(value, pos, "unpacked"));
    if (!j.is_array() || j.size() != targets.size()) {
      return error(pos, "cannot unpack " + type_name(j) + " " + python_repr(j) + " into " +
                            std::to_string(targets.size()) + " names");
    }
    for (size_t i = 0; i < targets.size(); ++i) scope[targets[i]] = Value{j[i]};
    return ok_status();
  }

  Result<std::vector<Json>> items_of(const Value& v, Position pos) {
    if (v.undefined) {
      if (strict_) return error(pos, v.hint + " (iterated)");
      return std::vector<Json>{};
    }
    return iterate(v.json, site(pos));
  }

  Status render_for(const Node& node, std::string& out) {
    CODEACT_TRY(auto iterable, eval(*node.expr));
    CODEACT_TRY(auto all, items_of(iterable, node.expr->pos));
    std::vector<Json> items;
    if (node.filter) {
      for (auto& item : all) {
        scopes_.emplace_back();
        Status st = assign(node.targets, Value{item}, node.pos);
        Result<Value> keep = st.ok() ? eval(*node.filter) : Result<Value>(st.error());
        scopes_.pop_back();
        if (!keep.ok()) return std::move(keep).error();
        CODEACT_TRY(bool yes, truth(*keep, node.filter->pos));
        if (yes) items.push_back(std::move(item));
      }
    } else {
      items = std::move(all);
    }
    if (items.empty()) return render(node.else_body, out);
    const size_t n = items.size();
    for (size_t i = 0; i < n; ++i) {
      Json loop = {
          {"index", i + 1},
          {"index0", i},
          {"revindex", n - i},
          {"revindex0", n - i - 1},
          {"first", i == 0},
          {"last", i + 1 == n},
          {"length", n},
          {"previtem", i > 0 ? items[i - 1] : Json()},
          {"nextitem", i + 1 < n ? items[i + 1] : Json()},
      };
      // a pass costs what it makes: its `loop` variable, which is most of the work
      CODEACT_TRY_STATUS(site(node.pos).spend(kStepWeight + json_weight(loop), "this loop"));
      scopes_.emplace_back();
      scopes_.back()["loop"] = Value{std::move(loop)};
      Status st = assign(node.targets, Value{items[i]}, node.pos);
      if (st.ok()) st = render(node.body, out);
      scopes_.pop_back();
      CODEACT_TRY_STATUS(st);
    }
    return ok_status();
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    if (context_.is_object()) {
      auto found = context_.find(name);
      if (found != context_.end()) return Value{*found};
    }
    return Value::undef("'" + name + "' is undefined");
  }

  // The context's variable `name` in place, unless a set or loop variable hides it; or nullptr.
  const Json* context_variable(const std::string& name) const {
    for (const auto& scope : scopes_) {
      if (scope.count(name)) return nullptr;
    }
    if (!context_.is_object()) return nullptr;
    auto found = context_.find(name);
    return found != context_.end() ? &*found : nullptr;
  }

  Result<Args> eval_args(const Expr& e, size_t first) {
    Args args;
    for (size_t i = first; i < e.args.size(); ++i) {
      CODEACT_TRY(auto v, eval(*e.args[i]));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [k, ex] : e.kwargs) {
      CODEACT_TRY(auto v, eval(*ex));
      args.keyword.emplace_back(k, std::move(v));
    }
    return args;
  }

  // A dict's member or a list's item, in place; nullptr when there is none (or when it would be
  // made: a string's character).
  static const Json* item_of(const Json& j, const Json& key) {
    if (j.is_object() && key.is_string()) {
      auto found = j.find(key.get_ref<const std::string&>());
      return found != j.end() ? &*found : nullptr;
    }
    if (j.is_array() && (key.is_number_integer() || key.is_number_unsigned())) {
      auto i = signed_int(key);
      auto size = static_cast<int64_t>(j.size());
      if (!i) return nullptr;
      int64_t at = *i < 0 ? *i + size : *i;
      return at >= 0 && at < size ? &j[static_cast<size_t>(at)] : nullptr;
    }
    return nullptr;
  }

  Value member(const Json& j, const Json& key, const std::string& shown) const {
    if (const Json* found = item_of(j, key)) return Value{*found};
    if (j.is_string() && (key.is_number_integer() || key.is_number_unsigned())) {
      if (auto i = signed_int(key)) {
        if (auto c = utf8_char_at(j.get_ref<const std::string&>(), *i)) return Value{Json(*c)};
      }
    }
    return Value::undef(type_name(j) + " object has no " + shown);
  }

  // A value read in place (part of the context, which does not change while rendering), or one
  // evaluated. A prompt reads `sandbox_variable_names[name]` once per variable; a copy of the
  // whole map each time would make that quadratic.
  struct Operand {
    Value value;                     // when not in place
    const Json* in_place = nullptr;  // points into context_
    const Json& json() const { return in_place ? *in_place : value.json; }
  };

  // `x`, `x.a`, `x[k]`: in place when x is the context's, else evaluated (and spent as such).
  Result<Operand> operand(const Expr& e) {
    if (e.kind == Expr::Kind::kName) {
      if (const Json* found = context_variable(e.name)) {
        CODEACT_TRY_STATUS(site(e.pos).spend(kStepWeight, "this expression"));
        return Operand{{}, found};
      }
    } else if (e.kind == Expr::Kind::kAttr || e.kind == Expr::Kind::kIndex) {
      CODEACT_TRY(auto read, access(e));
      size_t weight = kStepWeight;
      if (!read.in_place) weight += json_weight(read.value.json) + read.value.hint.size();
      CODEACT_TRY_STATUS(site(e.pos).spend(weight, "this expression"));
      return read;
    }
    CODEACT_TRY(auto v, eval(e));
    return Operand{std::move(v)};
  }

  // `x.a` or `x[k]` (an Expr kAttr or kIndex).
  Result<Operand> access(const Expr& e) {
    CODEACT_TRY(auto base, operand(*e.args[0]));
    Value index;
    if (e.kind == Expr::Kind::kIndex) {
      CODEACT_TRY(index, eval(*e.args[1]));
    }
    if (!base.in_place && base.value.undefined) {
      if (strict_) return error(e.pos, base.value.hint);
      return base;
    }
    Json key = Json(e.name);
    std::string shown = "attribute '" + e.name + "'";
    if (e.kind == Expr::Kind::kIndex) {
      CODEACT_TRY(key, use(index, e.args[1]->pos, "used as an index"));
      shown = "item " + short_repr(key);
    }
    if (base.in_place) {
      if (const Json* found = item_of(*base.in_place, key)) return Operand{{}, found};
    }
    return Operand{member(base.json(), key, shown)};
  }

  // Every value an expression makes is spent against the render's budget.
  Result<Value> eval(const Expr& e) {
    CODEACT_TRY(auto v, eval_unspent(e));
    CODEACT_TRY_STATUS(
        site(e.pos).spend(kStepWeight + json_weight(v.json) + v.hint.size(), "this expression"));
    return v;
  }

  Result<Value> eval_unspent(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return Value{e.literal};
      case Expr::Kind::kName:
        return lookup(e.name);
      case Expr::Kind::kAttr:
      case Expr::Kind::kIndex: {
        CODEACT_TRY(auto read, access(e));
        if (read.in_place) return Value{*read.in_place};
        return std::move(read.value);
      }
      case Expr::Kind::kCall: {
        const Expr& callee = *e.args[0];
        CODEACT_TRY(auto args, eval_args(e, 1));
        if (callee.kind == Expr::Kind::kAttr) {
          CODEACT_TRY(auto self, eval(*callee.args[0]));
          return call_method(self, callee.name, args, site(callee.pos));
        }
        if (callee.kind == Expr::Kind::kName && callee.name == "range" &&
            lookup("range").undefined) {
          return range(args, e.pos);
        }
        return error(e.pos, "only methods (x.items(), s.strip(), ...) and range() can be called");
      }
      case Expr::Kind::kFilter: {
        CODEACT_TRY(auto input, eval(*e.args[0]));
        CODEACT_TRY(auto args, eval_args(e, 1));
        return apply_filter(e.name, std::move(input), args, site(e.pos));
      }
      case Expr::Kind::kTest: {
        CODEACT_TRY(auto input, eval(*e.args[0]));
        CODEACT_TRY(auto args, eval_args(e, 1));
        CODEACT_TRY(bool r, apply_test(e.name, input, args, site(e.pos)));
        return Value{Json(e.negated ? !r : r)};
      }
      case Expr::Kind::kNeg: {
        CODEACT_TRY(auto v, eval(*e.args[0]));
        if (v.undefined || !v.json.is_number()) {
          return error(e.pos,
                       "bad operand for unary -: " + (v.undefined ? v.hint : type_name(v.json)));
        }
        if (v.json.is_number_float()) return Value{Json(-v.json.get<double>())};
        auto operand = signed_int(v.json);
        int64_t negated = 0;
        if (!operand || __builtin_sub_overflow(int64_t{0}, *operand, &negated))
          return error(e.pos, "integer overflow in unary -");
        return Value{Json(negated)};
      }
      case Expr::Kind::kNot: {
        CODEACT_TRY(auto v, eval(*e.args[0]));
        CODEACT_TRY(bool t, truth(v, e.args[0]->pos));
        return Value{Json(!t)};
      }
      case Expr::Kind::kAnd:
      case Expr::Kind::kOr: {
        CODEACT_TRY(auto left, eval(*e.args[0]));
        CODEACT_TRY(bool t, truth(left, e.args[0]->pos));
        if ((e.kind == Expr::Kind::kAnd) != t) return left;  // Python returns the deciding operand
        return eval(*e.args[1]);
      }
      case Expr::Kind::kCond: {
        CODEACT_TRY(auto cond, eval(*e.args[1]));
        CODEACT_TRY(bool t, truth(cond, e.args[1]->pos));
        if (t) return eval(*e.args[0]);
        if (e.args.size() > 2) return eval(*e.args[2]);
        return Value::undef("the condition of an inline if was false and it has no else");
      }
      case Expr::Kind::kList: {
        Json out = Json::array();
        for (const auto& item : e.args) {
          CODEACT_TRY(auto v, eval(*item));
          CODEACT_TRY(auto j, use(v, item->pos, "put in a list"));
          out.push_back(std::move(j));
        }
        return Value{out};
      }
      case Expr::Kind::kDict: {
        Json out = Json::object();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          CODEACT_TRY(auto k, eval(*e.args[i]));
          CODEACT_TRY(auto v, eval(*e.args[i + 1]));
          CODEACT_TRY(auto kj, use(k, e.args[i]->pos, "used as a key"));
          CODEACT_TRY(auto vj, use(v, e.args[i + 1]->pos, "put in a dict"));
          out[python_str(kj)] = std::move(vj);
        }
        return Value{out};
      }
      case Expr::Kind::kBinary:
        return binary(e);
    }
    return error(e.pos, "unsupported expression");
  }

  Result<Value> range(const Args& args, Position pos) {
    std::vector<int64_t> n;
    for (const auto& a : args.positional) {
      if (a.undefined || !(a.json.is_number_integer() || a.json.is_number_unsigned())) {
        return error(pos, "range() needs integer arguments");
      }
      n.push_back(a.json.get<int64_t>());
    }
    int64_t start = 0, stop = 0, step = 1;
    if (n.size() == 1) {
      stop = n[0];
    } else if (n.size() == 2 || n.size() == 3) {
      start = n[0];
      stop = n[1];
      if (n.size() == 3) step = n[2];
    } else {
      return error(pos, "range() takes 1 to 3 arguments");
    }
    if (step == 0) return error(pos, "range() step must not be zero");
    Json out = Json::array();
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
      if (out.size() >= 100000) return error(pos, "range() longer than 100000 items");
      out.push_back(i);
      if (__builtin_add_overflow(i, step, &i)) break;  // the next one would be past int64_t
    }
    return Value{out};
  }

  Result<Value> binary(const Expr& e) {
    const std::string& op = e.name;
    CODEACT_TRY(auto lv, eval(*e.args[0]));
    CODEACT_TRY(auto rv, eval(*e.args[1]));
    if (op == "~") {
      CODEACT_TRY(auto l, use(lv, e.args[0]->pos, "concatenated"));
      CODEACT_TRY(auto r, use(rv, e.args[1]->pos, "concatenated"));
      return Value{Json(python_str(l) + python_str(r))};
    }
    if (op == "==" || op == "!=") {
      bool eq;
      if (lv.undefined || rv.undefined) {
        if (strict_) return error(e.pos, (lv.undefined ? lv.hint : rv.hint) + " (compared)");
        eq = lv.undefined && rv.undefined;
      } else {
        eq = lv.json == rv.json;
      }
      return Value{Json(op == "==" ? eq : !eq)};
    }
    if (op == "in" || op == "not in") {
      if (rv.undefined && !strict_) return Value{Json(op != "in")};
      CODEACT_TRY(auto l, use(lv, e.args[0]->pos, "tested with 'in'"));
      CODEACT_TRY(auto r, use(rv, e.args[1]->pos, "tested with 'in'"));
      bool found;
      if (r.is_string()) {
        if (!l.is_string()) {
          return error(e.pos, "'in <string>' requires string as left operand, not " + type_name(l));
        }
        found = find_text(r.get_ref<const std::string&>(), l.get_ref<const std::string&>()) !=
                std::string::npos;
      } else if (r.is_array()) {
        found = std::find(r.begin(), r.end(), l) != r.end();
      } else if (r.is_object()) {
        found = l.is_string() && r.contains(l.get<std::string>());
      } else {
        return error(e.pos, "argument of type '" + type_name(r) + "' is not iterable");
      }
      return Value{Json(op == "in" ? found : !found)};
    }
    if (lv.undefined || rv.undefined) {
      return error(e.pos, (lv.undefined ? lv.hint : rv.hint) + " (operator '" + op + "')");
    }
    const Json& l = lv.json;
    const Json& r = rv.json;
    auto unsupported = [&]() {
      return error(e.pos, "unsupported operand types for " + op + ": '" + type_name(l) + "' and '" +
                              type_name(r) + "'");
    };
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      bool comparable = (l.is_number() && r.is_number()) || (l.is_string() && r.is_string()) ||
                        (l.is_array() && r.is_array());
      if (!comparable) return unsupported();
      bool less, greater;
      if (l.is_number()) {
        less = l.get<double>() < r.get<double>();
        greater = l.get<double>() > r.get<double>();
      } else {
        less = l < r;
        greater = r < l;
      }
      bool res = op == "<" ? less : op == ">" ? greater : op == "<=" ? !greater : !less;
      return Value{Json(res)};
    }
    if (op == "+") {
      if (l.is_string() && r.is_string())
        return Value{Json(l.get<std::string>() + r.get<std::string>())};
      if (l.is_array() && r.is_array()) {
        Json out = l;
        for (const auto& x : r) out.push_back(x);
        return Value{out};
      }
    }
    if (!l.is_number() || !r.is_number()) return unsupported();
    bool ints = !l.is_number_float() && !r.is_number_float();
    if (op == "/") {
      if (r.get<double>() == 0) return error(e.pos, "division by zero");
      return Value{Json(l.get<double>() / r.get<double>())};
    }
    if (ints) {
      // Python's integers do not overflow; ours are int64_t, and going past it is an error.
      auto la = signed_int(l), rb = signed_int(r);
      if (!la || !rb) return error(e.pos, "integer overflow in " + op);
      int64_t a = *la, b = *rb, out = 0;
      bool overflow = (op == "+" && __builtin_add_overflow(a, b, &out)) ||
                      (op == "-" && __builtin_sub_overflow(a, b, &out)) ||
                      (op == "*" && __builtin_mul_overflow(a, b, &out)) ||
                      ((op == "//" || op == "%") && a == INT64_MIN && b == -1);
      if (overflow) return error(e.pos, "integer overflow in " + op);
      if (op == "+" || op == "-" || op == "*") return Value{Json(out)};
      if (b == 0) return error(e.pos, "integer division or modulo by zero");
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {  // Python floors
        q -= 1;
        m += b;
      }
      if (op == "//") return Value{Json(q)};
      if (op == "%") return Value{Json(m)};
    } else {
      double a = l.get<double>(), b = r.get<double>();
      if (op == "+") return Value{Json(a + b)};
      if (op == "-") return Value{Json(a - b)};
      if (op == "*") return Value{Json(a * b)};
      if (b == 0) return error(e.pos, "float division or modulo by zero");
      if (op == "//") return Value{Json(std::floor(a / b))};
      if (op == "%") return Value{Json(a - b * std::floor(a / b))};
    }
    return unsupported();
  }

  const Program& program_;
  const Json& context_;
  bool strict_;
  RenderBudget budget_{program_.options.render_budget_bytes};
  std::vector<std::map<std::string, Value>> scopes_;
};

}  // namespace
}  // namespace template_internal

Result<Template> Template::parse(std::string_view source, std::string name,
                                 TemplateOptions options) {
  CODEACT_TRY(auto tokens, template_internal::tokenize(source, name, options));
  CODEACT_TRY(auto program,
              template_internal::parse_tokens(std::move(tokens), std::move(name), options));
  return Template(std::move(program));
}

Result<std::string> Template::render(const Json& context) const {
  if (!context.is_null() && !context.is_object()) {
    return invalid_argument("template \"" + program_->name +
                            "\": the context must be a JSON object, got " +
                            std::string(context.type_name()));
  }
  std::string out;
  template_internal::Renderer renderer(*program_, context);
  CODEACT_TRY_STATUS(renderer.render(program_->body, out));
  return out;
}

const std::string& Template::name() const { return program_->name; }

Result<std::string> render_template(std::string_view source, const Json& context, std::string name,
                                    TemplateOptions options) {
  CODEACT_TRY(auto t, Template::parse(source, std::move(name), options));
  return t.render(context);
}

}  // namespace codeact::core
