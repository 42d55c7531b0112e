// Parser of the Jinja-subset engine: tokens -> syntax tree (template_internal.hpp).
// Precedence follows jinja2's parser: cond-expr < or < and < not < comparison/in < + - < ~
// < * / // % < unary - < postfix (. [] ()) and filters/tests.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "template_internal.hpp"

namespace codeact::core::template_internal {
namespace {

// Blocks and expressions nest at most this deep: parsing and rendering walk them recursively,
// and a template of a few kilobytes could otherwise nest thousands deep and overflow the stack.
constexpr int kMaxNesting = 100;

Error too_deep(const std::string& name, Position pos) {
  return template_error(name, pos, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
}

// Counts one level of the parser's recursion while it lives.
class Nesting {
 public:
  explicit Nesting(int& depth) : depth_(++depth) {}
  ~Nesting() { --depth_; }
  Nesting(const Nesting&) = delete;
  Nesting& operator=(const Nesting&) = delete;
  bool too_deep() const { return depth_ > kMaxNesting; }

 private:
  int& depth_;
};

// The deepest path of an expression tree, walked without recursion (a chain `1+1+...` is built
// by a loop, so it can be deeper than the parser ever recursed).
int expression_depth(const Expr& root) {
  int deepest = 0;
  std::vector<std::pair<const Expr*, int>> stack{{&root, 1}};
  while (!stack.empty()) {
    auto [e, depth] = stack.back();
    stack.pop_back();
    deepest = std::max(deepest, depth);
    for (const auto& a : e->args) {
      if (a) stack.emplace_back(a.get(), depth + 1);
    }
    for (const auto& [_, a] : e->kwargs) {
      if (a) stack.emplace_back(a.get(), depth + 1);
    }
  }
  return deepest;
}

// Every expression of `body` (blocks nest at most kMaxNesting deep, checked while parsing).
Status check_expression_depth(const Body& body, const std::string& name) {
  for (const auto& n : body) {
    std::vector<const Expr*> exprs = {n.expr.get(), n.filter.get()};
    for (const auto& [cond, _] : n.branches) exprs.push_back(cond.get());
    for (const Expr* e : exprs) {
      if (e && expression_depth(*e) > kMaxNesting) return too_deep(name, e->pos);
    }
    for (const auto& [_, branch] : n.branches) {
      CODEACT_TRY_STATUS(check_expression_depth(branch, name));
    }
    CODEACT_TRY_STATUS(check_expression_depth(n.body, name));
    CODEACT_TRY_STATUS(check_expression_depth(n.else_body, name));
  }
  return ok_status();
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string name)
      : tokens_(std::move(tokens)), name_(std::move(name)) {}

  Result<Body> parse_template() {
    Body body;
    std::string stopped_at;
    CODEACT_TRY_STATUS(parse_body(body, {}, stopped_at));
    return body;
  }

 private:
  const Token& peek(size_t ahead = 0) const {
    size_t k = std::min(i_ + ahead, tokens_.size() - 1);
    return tokens_[k];
  }
  const Token& next() {
    const Token& t = tokens_[i_];
    if (i_ + 1 < tokens_.size()) ++i_;
    return t;
  }
  bool at_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOperator && peek(ahead).value == op;
  }
  bool at_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).value == name;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kText:
        return "text";
      case TokenKind::kVariableBegin:
        return "'{{'";
      case TokenKind::kVariableEnd:
        return "end of tag '}}'";
      case TokenKind::kBlockBegin:
        return "'{%'";
      case TokenKind::kBlockEnd:
        return "end of tag '%}'";
      case TokenKind::kName:
        return "'" + t.value + "'";
      case TokenKind::kString:
        return "string literal";
      case TokenKind::kInteger:
      case TokenKind::kFloat:
        return "number " + t.value;
      case TokenKind::kOperator:
        return "'" + t.value + "'";
      case TokenKind::kEnd:
        return "end of template";
    }
    return "token";
  }
  Error unexpected(const Token& t, const std::string& expected) const {
    return template_error(name_, t.pos, "unexpected " + describe(t) + ", expected " + expected);
  }
  Status expect_op(std::string_view op) {
    if (!at_op(op)) return unexpected(peek(), "'" + std::string(op) + "'");
    next();
    return ok_status();
  }
  Status expect_block_end() {
    if (peek().kind != TokenKind::kBlockEnd) return unexpected(peek(), "end of tag '%}'");
    next();
    return ok_status();
  }
  Result<std::string> expect_name(const std::string& what) {
    if (peek().kind != TokenKind::kName) return unexpected(peek(), what);
    return next().value;
  }

  // Parses nodes until a block tag whose keyword is in `stop` (left unconsumed after the keyword:
  // `stopped_at` gets the keyword, the parser sits after it) or the end of the template.
  Status parse_body(Body& body, const std::vector<std::string>& stop, std::string& stopped_at) {
    Nesting nesting(nesting_);
    if (nesting.too_deep()) return too_deep(name_, peek().pos);
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::kEnd) {
        if (!stop.empty()) {
          std::string list;
          for (const auto& s : stop) list += (list.empty() ? "'" : " or '") + s + "'";
          return template_error(name_, t.pos,
                                "unexpected end of template, expected " + list +
                                    " to close the block opened at line " +
                                    std::to_string(open_line_));
        }
        return ok_status();
      }
      if (t.kind == TokenKind::kText) {
        Node n{Node::Kind::kText, t.pos};
        n.text = t.value;
        body.push_back(std::move(n));
        next();
        continue;
      }
      if (t.kind == TokenKind::kVariableBegin) {
        Position pos = t.pos;
        next();
        CODEACT_TRY(auto e, parse_expression());
        if (peek().kind != TokenKind::kVariableEnd) return unexpected(peek(), "end of tag '}}'");
        next();
        Node n{Node::Kind::kOutput, pos};
        n.expr = std::move(e);
        body.push_back(std::move(n));
        continue;
      }
      if (t.kind == TokenKind::kBlockBegin) {
        Position pos = t.pos;
        next();
        const Token& kw = peek();
        if (kw.kind != TokenKind::kName) return unexpected(kw, "a statement keyword");
        std::string keyword = kw.value;
        for (const auto& s : stop) {
          if (s == keyword) {
            next();
            stopped_at = keyword;
            return ok_status();
          }
        }
        next();
        if (keyword == "if") {
          CODEACT_TRY(auto n, parse_if(pos));
          body.push_back(std::move(n));
        } else if (keyword == "for") {
          CODEACT_TRY(auto n, parse_for(pos));
          body.push_back(std::move(n));
        } else if (keyword == "set") {
          CODEACT_TRY(auto n, parse_set(pos));
          body.push_back(std::move(n));
        } else {
          std::string hint;
          if (keyword == "elif" || keyword == "else" || keyword == "endif" || keyword == "endfor" ||
              keyword == "endset") {
            hint = " (no open block it could close)";
          } else {
            hint = " (supported: if, elif, else, endif, for, endfor, set, endset, raw)";
          }
          return template_error(name_, kw.pos, "unknown or misplaced tag '" + keyword + "'" + hint);
        }
        continue;
      }
      return unexpected(t, "text or a tag");
    }
  }

  Result<Node> parse_if(Position pos) {
    Node n{Node::Kind::kIf, pos};
    int saved = open_line_;
    open_line_ = pos.line;
    CODEACT_TRY(auto cond, parse_expression());
    CODEACT_TRY_STATUS(expect_block_end());
    while (true) {
      Body body;
      std::string stopped;
      CODEACT_TRY_STATUS(parse_body(body, {"elif", "else", "endif"}, stopped));
      n.branches.emplace_back(std::move(cond), std::move(body));
      if (stopped == "elif") {
        CODEACT_TRY(auto c, parse_expression());
        cond = std::move(c);
        CODEACT_TRY_STATUS(expect_block_end());
        continue;
      }
      if (stopped == "else") {
        CODEACT_TRY_STATUS(expect_block_end());
        std::string end;
        CODEACT_TRY_STATUS(parse_body(n.else_body, {"endif"}, end));
      }
      CODEACT_TRY_STATUS(expect_block_end());
      break;
    }
    open_line_ = saved;
    return n;
  }

  Result<Node> parse_for(Position pos) {
    Node n{Node::Kind::kFor, pos};
    int saved = open_line_;
    open_line_ = pos.line;
    CODEACT_TRY(auto first, expect_name("a loop variable name"));
    n.targets.push_back(first);
    while (at_op(",")) {
      next();
      CODEACT_TRY(auto more, expect_name("a loop variable name"));
      n.targets.push_back(more);
    }
    if (!at_name("in")) return unexpected(peek(), "'in'");
    next();
    CODEACT_TRY(auto iter, parse_or());  // no conditional expression: `if` is the loop filter
    n.expr = std::move(iter);
    if (at_name("if")) {
      next();
      CODEACT_TRY(auto f, parse_expression());
      n.filter = std::move(f);
    }
    CODEACT_TRY_STATUS(expect_block_end());
    std::string stopped;
    CODEACT_TRY_STATUS(parse_body(n.body, {"else", "endfor"}, stopped));
    if (stopped == "else") {
      CODEACT_TRY_STATUS(expect_block_end());
      std::string end;
      CODEACT_TRY_STATUS(parse_body(n.else_body, {"endfor"}, end));
    }
    CODEACT_TRY_STATUS(expect_block_end());
    open_line_ = saved;
    return n;
  }

  Result<Node> parse_set(Position pos) {
    Node n{Node::Kind::kSet, pos};
    CODEACT_TRY(auto first, expect_name("a variable name"));
    n.targets.push_back(first);
    while (at_op(",")) {
      next();
      CODEACT_TRY(auto more, expect_name("a variable name"));
      n.targets.push_back(more);
    }
    if (at_op("=")) {
      next();
      CODEACT_TRY(auto value, parse_expression());
      n.expr = std::move(value);
      CODEACT_TRY_STATUS(expect_block_end());
      return n;
    }
    if (n.targets.size() != 1) return unexpected(peek(), "'='");
    // Block set: {% set x %}...{% endset %}
    CODEACT_TRY_STATUS(expect_block_end());
    int saved = open_line_;
    open_line_ = pos.line;
    std::string end;
    CODEACT_TRY_STATUS(parse_body(n.body, {"endset"}, end));
    CODEACT_TRY_STATUS(expect_block_end());
    open_line_ = saved;
    return n;
  }

  // ---- expressions -----------------------------------------------------------------------

  static ExprPtr make(Expr::Kind kind, Position pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
  }

  Result<ExprPtr> parse_expression() {
    Nesting nesting(nesting_);
    if (nesting.too_deep()) return too_deep(name_, peek().pos);
    CODEACT_TRY(auto value, parse_or());
    if (at_name("if")) {
      Position pos = peek().pos;
      next();
      CODEACT_TRY(auto cond, parse_or());
      auto e = make(Expr::Kind::kCond, pos);
      e->args.push_back(std::move(value));
      e->args.push_back(std::move(cond));
      if (at_name("else")) {
        next();
        CODEACT_TRY(auto other, parse_expression());
        e->args.push_back(std::move(other));
      }
      return e;
    }
    return value;
  }

  Result<ExprPtr> parse_or() {
    CODEACT_TRY(auto left, parse_and());
    while (at_name("or")) {
      Position pos = next().pos;
      CODEACT_TRY(auto right, parse_and());
      auto e = make(Expr::Kind::kOr, pos);
      e->args.push_back(std::move(left));
      e->args.push_back(std::move(right));
      left = std::move(e);
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    CODEACT_TRY(auto left, parse_not());
    while (at_name("and")) {
      Position pos = next().pos;
      CODEACT_TRY(auto right, parse_not());
      auto e = make(Expr::Kind::kAnd, pos);
      e->args.push_back(std::move(left));
      e->args.push_back(std::move(right));
      left = std::move(e);
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
    if (at_name("not")) {
      Nesting nesting(nesting_);
      if (nesting.too_deep()) return too_deep(name_, peek().pos);
      Position pos = next().pos;
      CODEACT_TRY(auto operand, parse_not());
      auto e = make(Expr::Kind::kNot, pos);
      e->args.push_back(std::move(operand));
      return e;
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    CODEACT_TRY(auto left, parse_additive());
    while (true) {
      std::string op;
      Position pos = peek().pos;
      if (peek().kind == TokenKind::kOperator &&
          (peek().value == "==" || peek().value == "!=" || peek().value == "<" ||
           peek().value == "<=" || peek().value == ">" || peek().value == ">=")) {
        op = next().value;
      } else if (at_name("in")) {
        next();
        op = "in";
      } else if (at_name("not") && at_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      CODEACT_TRY(auto right, parse_additive());
      auto e = make(Expr::Kind::kBinary, pos);
      e->name = op;
      e->args.push_back(std::move(left));
      e->args.push_back(std::move(right));
      left = std::move(e);
    }
    return left;
  }

  Result<ExprPtr> parse_binary_level(int level) {
    // level 0: + -   level 1: ~   level 2: * / // %
    static const std::vector<std::vector<std::string>> kOps = {
        {"+", "-"}, {"~"}, {"*", "/", "//", "%"}};
    auto operand = [&]() -> Result<ExprPtr> {
      if (level == 2) return parse_unary();
      return parse_binary_level(level + 1);
    };
    CODEACT_TRY(auto left, operand());
    while (peek().kind == TokenKind::kOperator) {
      const auto& ops = kOps[static_cast<size_t>(level)];
      if (std::find(ops.begin(), ops.end(), peek().value) == ops.end()) break;
      Position pos = peek().pos;
      std::string op = next().value;
      CODEACT_TRY(auto right, operand());
      auto e = make(Expr::Kind::kBinary, pos);
      e->name = op;
      e->args.push_back(std::move(left));
      e->args.push_back(std::move(right));
      left = std::move(e);
    }
    return left;
  }
  Result<ExprPtr> parse_additive() { return parse_binary_level(0); }

  Result<ExprPtr> parse_unary() {
    CODEACT_TRY(auto operand, parse_unary_operand());
    return parse_filters(std::move(operand));
  }

  // Like jinja2, `-3 | abs` is `(-3) | abs`: the sign binds tighter than filters.
  Result<ExprPtr> parse_unary_operand() {
    if (at_op("-") || at_op("+")) {
      Nesting nesting(nesting_);
      if (nesting.too_deep()) return too_deep(name_, peek().pos);
      const bool minus = at_op("-");
      Position pos = next().pos;
      CODEACT_TRY(auto operand, parse_unary_operand());
      if (!minus) return operand;
      auto e = make(Expr::Kind::kNeg, pos);
      e->args.push_back(std::move(operand));
      return e;
    }
    CODEACT_TRY(auto primary, parse_primary());
    return parse_postfix(std::move(primary));
  }

  Result<ExprPtr> parse_primary() {
    const Token& t = peek();
    Position pos = t.pos;
    switch (t.kind) {
      case TokenKind::kString: {
        auto e = make(Expr::Kind::kLiteral, pos);
        std::string s = next().value;
        while (peek().kind == TokenKind::kString) s += next().value;  // "a" "b" concatenates
        e->literal = s;
        return e;
      }
      case TokenKind::kInteger: {
        auto e = make(Expr::Kind::kLiteral, pos);
        auto value = parse_int64(t.value);
        if (!value) return template_error(name_, pos, "integer literal out of range: " + t.value);
        e->literal = *value;
        next();
        return e;
      }
      case TokenKind::kFloat: {
        auto e = make(Expr::Kind::kLiteral, pos);
        char* end = nullptr;
        errno = 0;
        double d = std::strtod(t.value.c_str(), &end);
        if (errno == ERANGE && std::isinf(d))
          return template_error(name_, pos, "float literal out of range: " + t.value);
        e->literal = d;  // an underflow reads as 0.0 or the nearest subnormal, as in Python
        next();
        return e;
      }
      case TokenKind::kName: {
        std::string n = next().value;
        if (n == "true" || n == "True") return literal(pos, true);
        if (n == "false" || n == "False") return literal(pos, false);
        if (n == "none" || n == "None") return literal(pos, nullptr);
        auto e = make(Expr::Kind::kName, pos);
        e->name = n;
        return e;
      }
      case TokenKind::kOperator: {
        if (t.value == "(") {
          next();
          CODEACT_TRY(auto first, parse_expression());
          if (at_op(",")) {  // a tuple: treated as a list
            auto e = make(Expr::Kind::kList, pos);
            e->args.push_back(std::move(first));
            while (at_op(",")) {
              next();
              if (at_op(")")) break;
              CODEACT_TRY(auto item, parse_expression());
              e->args.push_back(std::move(item));
            }
            CODEACT_TRY_STATUS(expect_op(")"));
            return e;
          }
          CODEACT_TRY_STATUS(expect_op(")"));
          return first;
        }
        if (t.value == "[") {
          next();
          auto e = make(Expr::Kind::kList, pos);
          while (!at_op("]")) {
            CODEACT_TRY(auto item, parse_expression());
            e->args.push_back(std::move(item));
            if (!at_op(",")) break;
            next();
          }
          CODEACT_TRY_STATUS(expect_op("]"));
          return e;
        }
        if (t.value == "{") {
          next();
          auto e = make(Expr::Kind::kDict, pos);
          while (!at_op("}")) {
            CODEACT_TRY(auto key, parse_expression());
            CODEACT_TRY_STATUS(expect_op(":"));
            CODEACT_TRY(auto value, parse_expression());
            e->args.push_back(std::move(key));
            e->args.push_back(std::move(value));
            if (!at_op(",")) break;
            next();
          }
          CODEACT_TRY_STATUS(expect_op("}"));
          return e;
        }
        break;
      }
      default:
        break;
    }
    return unexpected(t, "an expression");
  }

  ExprPtr literal(Position pos, Json value) {
    auto e = make(Expr::Kind::kLiteral, pos);
    e->literal = std::move(value);
    return e;
  }

  Result<ExprPtr> parse_postfix(ExprPtr e) {
    while (true) {
      if (at_op(".")) {
        Position pos = e->pos;
        next();
        ExprPtr attr;
        if (peek().kind == TokenKind::kInteger) {  // foo.0 is foo[0]
          attr = make(Expr::Kind::kIndex, pos);
          attr->args.push_back(std::move(e));
          Position at = peek().pos;
          std::string digits = next().value;
          auto index = parse_int64(digits);
          if (!index) return template_error(name_, at, "index out of range: " + digits);
          attr->args.push_back(literal(at, *index));
        } else {
          CODEACT_TRY(auto n, expect_name("an attribute name after '.'"));
          attr = make(Expr::Kind::kAttr, pos);
          attr->name = n;
          attr->args.push_back(std::move(e));
        }
        e = std::move(attr);
      } else if (at_op("[")) {
        Position pos = e->pos;
        next();
        CODEACT_TRY(auto index, parse_expression());
        CODEACT_TRY_STATUS(expect_op("]"));
        auto idx = make(Expr::Kind::kIndex, pos);
        idx->args.push_back(std::move(e));
        idx->args.push_back(std::move(index));
        e = std::move(idx);
      } else if (at_op("(")) {
        Position pos = e->pos;
        auto call = make(Expr::Kind::kCall, pos);
        call->args.push_back(std::move(e));
        CODEACT_TRY_STATUS(parse_call_args(*call));
        e = std::move(call);
      } else {
        return e;
      }
    }
  }

  // Parses `( args, kw=value )` into e.args (appended) and e.kwargs.
  Status parse_call_args(Expr& e) {
    CODEACT_TRY_STATUS(expect_op("("));
    while (!at_op(")")) {
      if (peek().kind == TokenKind::kName && at_op("=", 1)) {
        std::string key = next().value;
        next();
        CODEACT_TRY(auto value, parse_expression());
        e.kwargs.emplace_back(key, std::move(value));
      } else {
        if (!e.kwargs.empty()) return unexpected(peek(), "a keyword argument (name=value)");
        CODEACT_TRY(auto value, parse_expression());
        e.args.push_back(std::move(value));
      }
      if (!at_op(",")) break;
      next();
    }
    return expect_op(")");
  }

  Result<ExprPtr> parse_filters(ExprPtr e) {
    while (true) {
      if (at_op("|")) {
        next();
        Position pos = peek().pos;
        CODEACT_TRY(auto n, expect_name("a filter name after '|'"));
        auto f = make(Expr::Kind::kFilter, pos);
        f->name = n;
        f->args.push_back(std::move(e));
        if (at_op("(")) CODEACT_TRY_STATUS(parse_call_args(*f));
        e = std::move(f);
      } else if (at_name("is")) {
        next();
        Position pos = peek().pos;
        auto t = make(Expr::Kind::kTest, pos);
        if (at_name("not")) {
          next();
          t->negated = true;
        }
        std::string n;
        if (peek().kind == TokenKind::kName) {
          n = next().value;
        } else if (at_op("==") || at_op("!=") || at_op("<") || at_op(">")) {
          n = next().value;
        } else {
          return unexpected(peek(), "a test name after 'is'");
        }
        t->name = n;
        t->args.push_back(std::move(e));
        if (at_op("(")) {
          CODEACT_TRY_STATUS(parse_call_args(*t));
        } else if (peek().kind == TokenKind::kString || peek().kind == TokenKind::kInteger ||
                   peek().kind == TokenKind::kFloat) {
          CODEACT_TRY(auto arg, parse_primary());  // `is divisibleby 3`, `is sameas none`
          t->args.push_back(std::move(arg));
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> tokens_;
  size_t i_ = 0;
  std::string name_;
  int open_line_ = 0;
  int nesting_ = 0;  // the parser's recursion (Nesting)
};

}  // namespace

Result<std::shared_ptr<Program>> parse_tokens(std::vector<Token> tokens, std::string name,
                                              TemplateOptions options) {
  Parser parser(std::move(tokens), name);
  CODEACT_TRY(auto body, parser.parse_template());
  CODEACT_TRY_STATUS(check_expression_depth(body, name));
  auto program = std::make_shared<Program>();
  program->name = std::move(name);
  program->options = options;
  program->body = std::move(body);
  return program;
}

}  // namespace codeact::core::template_internal
