"""The query language: grammar (lark), parser and abstract syntax."""
