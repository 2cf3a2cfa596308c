// The host's tools: a `store` provider answered from an in-memory catalogue. They run here, in
// the app's process; only data crosses into the sandbox.

import { Injectable } from '@nestjs/common';
import type { Dispatch, ProviderDeclaration, ToolCall } from '@supolka/codemode-executor';

export interface Product {
  id: string;
  name: string;
  price: number;
  stock: number;
}

const catalogue: readonly Product[] = [
  { id: '1', name: 'hat', price: 25, stock: 3 },
  { id: '2', name: 'scarf', price: 40, stock: 0 },
  { id: '3', name: 'gloves', price: 15, stock: 12 },
];

@Injectable()
export class StoreTools {
  /** The provider globals every run gets: `store.listProducts()`, `store.getProduct(id)`. */
  readonly providers: ProviderDeclaration[] = [{ name: 'store', tools: ['listProducts', 'getProduct'] }];

  /** Answers the sandbox's tool calls; a throw rejects that call inside the sandbox. */
  readonly dispatch: Dispatch = ({ provider, tool, args }: ToolCall) => {
    if (provider === 'store' && tool === 'listProducts') return catalogue.map((product) => ({ ...product }));
    if (provider === 'store' && tool === 'getProduct') {
      const [id] = args;
      const product = catalogue.find((item) => item.id === String(id));
      if (!product) throw new Error(`No product with id "${String(id)}"`);
      return { ...product };
    }
    throw new Error(`Unknown tool ${provider}.${tool}`);
  };
}
