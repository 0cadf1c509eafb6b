/**
 * The part of `mvdan-sh` (mvdan.cc/sh/v3/syntax compiled to JavaScript by GopherJS) the guards
 * use. Nodes are Go structs seen through getters, named as in the Go package; nil is `null`.
 */
declare module 'mvdan-sh' {
  /** Any syntax node; fields are read by their Go names (`Stmts`, `Cmd`, `Args`, `Parts`, …). */
  export interface ShNode {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    readonly [field: string]: any;
    Pos(): { Offset(): number };
    End(): { Offset(): number };
  }
  export interface ShParser {
    /** Throws a ParseError object (with `Error()` and `Text`) on invalid input. */
    Parse(src: string, name: string): ShNode;
  }
  export const syntax: {
    NewParser(): ShParser;
    NodeType(node: ShNode): string;
    Walk(node: ShNode, visit: (node: ShNode | null) => boolean): void;
  };
}
