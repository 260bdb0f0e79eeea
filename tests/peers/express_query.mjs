// A real Express app (the framework server-everything is built on) that answers every request
// with its query as Express reads it with the "extended" query parser (qs; Express 4's
// default): the upstream a gateway must not let a client steer a fixed query parameter of.
//
//   node express_query.mjs PORT
import express from 'express';

const app = express();
app.set('query parser', 'extended');
app.use((req, res) => res.json({ path: req.path, query: req.query }));
app.listen(Number(process.argv[2]), '127.0.0.1');
